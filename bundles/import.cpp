#include "bundles/import.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "bundles/placed_images.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/parallel.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/chart_fetch.hpp"
#include "mirror/oci.hpp"
#include "mirror/push.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"

namespace gb::bundles {

namespace {

// The install kit for the site, with the charts the bundle carries.
struct SiteKit {
  kit::Kit kit;
  std::string chart;  // the GPU Operator chart's archive
  std::optional<mirror::LoadedChart> network_chart;
};

Result<SiteKit> make_site_kit(const VerifyReport& verified, const recipes::Lock& lock, const kit::SiteRegistry& site, const ImportOptions& o,
                              const std::vector<std::filesystem::path>& volumes) {
  const VolumeManifest& m = verified.manifest;
  SiteKit out;
  // The GPU Operator's chart by its name; a bundle of a lock with a network
  // section carries the network-operator chart too (bundle_writer.cpp).
  const std::string network_file =
      lock.network ? "charts/" + recipes::chart_file_name(lock.network->chart.name, lock.network->chart.version) : "";
  const BundleFile* chart_file = nullptr;
  const BundleFile* network_chart_file = nullptr;
  for (const auto& f : m.files) {
    if (!starts_with(f.path, "charts/") || f.parts != 0) continue;
    if (f.path == network_file) network_chart_file = &f;
    else if (!chart_file || f.path == "charts/" + kit::kit_chart_file(lock)) chart_file = &f;
  }
  if (!chart_file) return op_error("bundle " + m.bundle_id + " carries no chart: cannot write the install kit");
  if (lock.network && !network_chart_file)
    return op_error("bundle " + m.bundle_id + " carries no " + network_file + " for its lock's network section: cannot write the install kit");
  auto read_chart = [&](const BundleFile& f) -> Result<std::string> {
    if (f.size > k_max_chart_bytes)
      return op_error("bundle " + m.bundle_id + ": chart " + f.path + " is larger than " + human_bytes(k_max_chart_bytes));
    const auto& loc = verified.locations.at(f.path);
    return BundleBlobs::read_stored(BundleBlob{"", {{loc.volume, loc.offset, f.size}}});
  };
  auto stored = read_chart(*chart_file);
  if (!stored) return stored.error();
  auto chart = mirror::lock_chart_archive(lock, std::move(stored.value()), chart_file->path);
  if (!chart) return chart.error();
  if (network_chart_file) {
    auto net_stored = read_chart(*network_chart_file);
    if (!net_stored) return net_stored.error();
    auto net = mirror::locked_chart_archive(lock.network->chart, std::move(net_stored.value()), network_chart_file->path);
    if (!net) return net.error();
    out.network_chart = std::move(*net);
  }
  kit::KitOptions ko;
  ko.registry = site;
  ko.layout = o.layout;
  ko.bundle_id = m.bundle_id;
  ko.package_repo_url = o.package_repo_url;
  ko.package_repo_ca = o.package_repo_ca;
  if (out.network_chart) ko.network_chart = &out.network_chart->chart;
  ko.serve = o.serve;
  if (o.serve)
    for (const auto& v : volumes) ko.serve_bundles.push_back(v.filename().string());
  // The CA gpubundle was told to trust for the site is the one its nodes need.
  if (const mirror::HostConfig* h = o.config.host(site.host); h && !h->ca_file.empty() && !site.plain_http) {
    auto pem = read_file(h->ca_file);
    if (!pem) return pem.error();
    ko.registry_ca = pem.value();
  }
  std::map<std::string, std::uint64_t> stored_size;  // blob -> bytes in the bundle
  for (const auto& f : m.files)
    if (!f.blob.empty()) stored_size[f.blob] += f.size;
  for (const auto& img : m.images) {
    std::uint64_t size = 0;
    for (const auto& d : img.blobs)
      if (auto it = stored_size.find(d); it != stored_size.end()) size += it->second;
    ko.image_sizes[img.ref] = size;
  }
  auto made = kit::make_kit(lock, chart->chart, ko);
  if (!made) return made.error();
  out.kit = std::move(made.value());
  out.chart = std::move(chart->archive);
  return out;
}

Result<void> write_site_kit(const SiteKit& k, const recipes::Lock& lock, const std::filesystem::path& dir) {
  if (auto w = kit::write_kit(k.kit, dir); !w) return w.error();
  if (auto w = write_atomic(dir / kit::kit_chart_file(lock), k.chart); !w) return w.error();
  if (k.network_chart)
    if (auto w = write_atomic(dir / recipes::chart_file_name(lock.network->chart.name, lock.network->chart.version), k.network_chart->archive); !w)
      return w.error();
  return {};
}

}  // namespace

Result<ImportReport> import_bundle(const std::vector<std::filesystem::path>& volumes, const ImportOptions& o, Progress& progress) {
  // 1. Verify the signature, every header, every non-blob entry and the
  // closure (hashing the manifests it reads); blobs are hashed in step 3,
  // only those the site lacks, all before the first byte leaves.
  if (auto r = require_volume_files(volumes); !r) return r.error();
  VerifyOptions vo;
  vo.trusted = o.trusted;
  vo.defer_blobs = true;
  VerifyReport verified = verify_bundle(volumes, vo);
  auto refused = [&] { return op_error(join(verified.problems, "\n") + "\nimport refused: nothing was pushed"); };
  if (!verified.problems.empty()) return refused();
  const VolumeManifest& m = verified.manifest;
  std::map<std::string, std::uint64_t> stored_size;  // blob -> bytes in the bundle, whether hashed yet or not
  for (const auto& f : m.files)
    if (!f.blob.empty()) stored_size[f.blob] += f.size;
  recipes::Lock lock = recipes::parse_lock(m.lock_json, "bundle lock").value_or_throw();
  // Plain HTTP when --registry says http:// or the registry config says
  // plainHttp for the site host: the push and the kit's node config agree.
  kit::SiteRegistry site = o.site;
  if (const mirror::HostConfig* h = o.config.host(site.host); h && h->plain_http) site.plain_http = true;

  if (o.serve) {
    // Nothing leaves: every blob is hashed now, and the kit is for the host
    // that serves this bundle (serve hashes each blob again on first read).
    std::set<std::string> all;
    for (const auto& f : m.files)
      if (!f.blob.empty()) all.insert(f.blob);
    hash_blobs(verified, all);
    if (!verified.problems.empty()) return refused();
    ImportReport report;
    report.bundle_id = m.bundle_id;
    report.images = m.images.size();
    report.bytes_hashed = verified.bytes;
    auto placements = kit::place_images(lock, site, o.layout);
    if (!placements) return placements.error();
    for (const auto& p : placements.value()) report.destinations.push_back(p.destination.str());
    std::sort(report.destinations.begin(), report.destinations.end());
    if (!o.kit_dir.empty()) {
      auto made = make_site_kit(verified, lock, site, o, volumes);
      if (!made) return made.error();
      if (auto w = write_site_kit(made.value(), lock, o.kit_dir); !w) return w.error();
    }
    return report;
  }

  auto blobs = BundleBlobs::from(verified);
  if (!blobs) return blobs.error();

  // 2. Per image: its repository, its manifests (to push last) and its other blobs.
  auto placed = placed_images(m, blobs.value(), site, o.layout);
  if (!placed) return placed.error();
  const std::vector<PlacedImage>& plans = placed->images;
  const std::map<std::string, PlacedManifest>& manifests = placed->manifests;

  mirror::RegistryConfig config = o.config;
  if (site.plain_http) {
    config.hosts[site.host].plain_http = true;
  }
  mirror::ClientOptions co;
  co.max_parallel = o.jobs;
  mirror::RegistryClient client(config, co);

  // 3. The push (mirror/push.hpp): what the site lacks, then those blobs
  // hashed, all before the first byte leaves; a blob the site has is never read.
  mirror::PushPlan plan;
  for (const auto& p : plans) {
    mirror::PushImage pi{p.repo, p.tagged, p.manifests, p.blobs, ""};
    if (p.sparse)
      pi.top_hint = "this bundle carries index " + p.manifests.back() + " without some of its platforms, which registries that "
                    "check an index's manifests refuse: make the bundle again with this gpubundle, which sends a filtered index "
                    "(docs/lock.md)";
    plan.images.push_back(std::move(pi));
  }
  for (const auto& [d, pm] : manifests) plan.manifests[d] = {pm.media_type, pm.bytes};
  plan.omitted.insert(m.omitted.begin(), m.omitted.end());
  plan.omitted_by = "this delta bundle";
  plan.omitted_hint = "import the bundle it was made against first, or make a full bundle";
  mirror::PushOptions po;
  po.jobs = o.jobs;
  po.verb = "import";
  po.place = "the site registry";
  po.check_blobs = o.check_blobs;
  po.stored_size = [&](const std::string& d) -> std::uint64_t {
    auto it = stored_size.find(d);
    return it == stored_size.end() ? 0 : it->second;
  };
  // The install kit for this registry, with the chart from the bundle: made
  // before the first push, so that a bundle it cannot be made from pushes
  // nothing (and after the bundle's own checks, which say more).
  std::optional<SiteKit> kit;
  po.prepare = [&](const std::set<std::string>& uploads) -> Result<void> {
    hash_blobs(verified, uploads);
    if (!verified.problems.empty()) return refused();
    blobs = BundleBlobs::from(verified);
    if (!blobs) return blobs.error();
    if (!o.kit_dir.empty()) {
      auto made = make_site_kit(verified, lock, site, o, volumes);
      if (!made) return made.error();
      kit = std::move(made.value());
    }
    return {};
  };
  po.open_blob = [&](const std::string& d, const std::function<void(std::uint64_t)>& on_bytes)
      -> Result<std::unique_ptr<mirror::BlobSource>> {
    const BundleBlob* b = blobs->find(d);
    if (!b) return op_error("the bundle does not carry " + d);
    // zstd blobs are decoded as they go out, never whole in memory.
    return BundleBlobs::content_source(*b, on_bytes);
  };
  auto pushed = mirror::push_images(client, plan, po, progress);
  if (!pushed) return pushed.error();
  ImportReport report;
  report.bundle_id = m.bundle_id;
  report.images = plans.size();
  static_cast<mirror::PushReport&>(report) = std::move(pushed.value());
  report.bytes_hashed = verified.bytes;

  // 5. The install kit, made before the first push.
  if (kit)
    if (auto w = write_site_kit(*kit, lock, o.kit_dir); !w) return w.error();
  return report;
}

}  // namespace gb::bundles
