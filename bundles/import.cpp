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

  // 3. Blob jobs: the first repository needing a digest uploads it, the rest mount.
  struct BlobJob {
    recipes::Reference repo;
    std::string digest;
    std::optional<recipes::Reference> mount_from;
    std::size_t plan;  // the image it is for
  };
  std::vector<BlobJob> uploads, mounts;
  std::map<std::string, recipes::Reference> first_repo;
  std::set<std::string> omitted(m.omitted.begin(), m.omitted.end());
  for (std::size_t i = 0; i < plans.size(); ++i)
    for (const auto& d : plans[i].blobs) {
      const recipes::Reference& repo = plans[i].repo;
      auto [it, fresh] = first_repo.emplace(d, repo);
      if (fresh) uploads.push_back({repo, d, std::nullopt, i});
      else if (!(it->second == repo)) mounts.push_back({repo, d, it->second, i});
    }

  ImportReport report;
  report.bundle_id = m.bundle_id;
  report.images = plans.size();
  // Manifests, pushed last: children by digest, then the top one by tag (or digest).
  struct ManifestJob {
    recipes::Reference ref;
    std::string digest;
  };
  std::vector<ManifestJob> manifest_jobs;
  std::vector<std::size_t> first_manifest;  // plan i's are [first_manifest[i], first_manifest[i + 1])
  for (const auto& p : plans) {
    first_manifest.push_back(manifest_jobs.size());
    for (const auto& d : p.manifests) {
      bool top = d == p.manifests.back();
      recipes::Reference ref = top && !p.tagged.tag.empty() ? p.tagged : p.repo;
      if (!top || p.tagged.tag.empty()) ref.digest = d;
      manifest_jobs.push_back({ref, d});
    }
  }
  first_manifest.push_back(manifest_jobs.size());

  // What the site lacks. First each image's top manifest: where the site has
  // it under its tag (or digest), the image is complete, since a registry
  // takes a manifest only when it has everything the manifest names, so
  // nothing below it needs a request. Then, for the other images, one HEAD per
  // child manifest, and per blob and repository, in one parallel pass. Every
  // blob that may have to be pushed (a mount can fail) is then hashed, all of
  // them before the first byte leaves; a blob the site has is never read.
  std::vector<BlobJob> jobs = uploads;
  jobs.insert(jobs.end(), mounts.begin(), mounts.end());
  // A failure talking to the site: a host that could not be talked to at all
  // in one line (not one per image or blob), then what the site got.
  auto at_site = [&](const Failure& f) -> Failure {
    std::vector<std::string> lines = client.by_host(split(f.message, '\n'));
    std::size_t done = report.destinations.size();
    std::string last = "import: " + std::to_string(done) + " of " + std::to_string(plans.size()) + " images pushed";
    if (report.blobs_pushed + report.blobs_mounted + report.manifests_pushed == 0)
      last += "; nothing at the site changed";
    else
      last += ", " + std::to_string(plans.size() - done) + " not (" + std::to_string(report.blobs_pushed) + " blobs and " +
              std::to_string(report.manifests_pushed) + " manifests pushed, " + std::to_string(report.blobs_mounted) +
              " blobs mounted); importing again pushes the rest";
    lines.push_back(last);
    return Failure{f.kind, join(lines, "\n")};
  };
  std::vector<char> needed(jobs.size(), 0), manifest_there(manifest_jobs.size(), 0), complete(plans.size(), 0);
  auto head_manifest = [&](std::size_t k) -> Result<void> {
    const ManifestJob& mj = manifest_jobs[k];
    auto current = client.head_manifest(mj.ref);
    if (!current) return op_error(mj.ref.str() + ": " + current.error().message);
    manifest_there[k] = current.value() && *current.value() == mj.digest;
    return {};
  };
  auto tops = parallel_try(plans.size(), o.jobs, [&](std::size_t i) -> Result<void> {
    auto r = head_manifest(first_manifest[i + 1] - 1);
    complete[i] = manifest_there[first_manifest[i + 1] - 1] && !o.check_blobs;
    return r;
  });
  if (!tops) return at_site(tops.error());
  std::vector<std::size_t> children;  // manifest jobs still to ask about
  for (std::size_t i = 0; i < plans.size(); ++i)
    for (std::size_t k = first_manifest[i]; k + 1 < first_manifest[i + 1]; ++k)
      if (complete[i]) manifest_there[k] = 1;
      else children.push_back(k);
  std::mutex report_mu;
  auto headed = parallel_try(children.size() + jobs.size(), o.jobs, [&](std::size_t i) -> Result<void> {
    if (i < children.size()) return head_manifest(children[i]);
    std::size_t b = i - children.size();
    const BlobJob& j = jobs[b];
    if (omitted.count(j.digest) && !j.mount_from) return {};  // the delta check looks for it
    if (complete[j.plan]) {
      std::lock_guard l(report_mu);
      ++report.blobs_present;
      return {};
    }
    auto has = client.blob_exists(j.repo, j.digest);
    if (!has) return has.error();
    std::lock_guard l(report_mu);
    if (has.value()) ++report.blobs_present;
    else needed[b] = 1;
    return {};
  });
  if (!headed) return at_site(headed.error());
  std::set<std::string> to_push;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!needed[i] || !to_push.insert(jobs[i].digest).second) continue;
    if (auto it = stored_size.find(jobs[i].digest); it != stored_size.end()) total += it->second;
  }
  hash_blobs(verified, to_push);
  if (!verified.problems.empty()) return refused();
  blobs = BundleBlobs::from(verified);
  if (!blobs) return blobs.error();

  // The install kit for this registry, with the chart from the bundle: made
  // before the first push, so that a bundle it cannot be made from pushes
  // nothing (and after the bundle's own checks, which say more).
  std::optional<SiteKit> kit;
  if (!o.kit_dir.empty()) {
    auto made = make_site_kit(verified, lock, site, o, volumes);
    if (!made) return made.error();
    kit = std::move(made.value());
  }
  // A delta needs the site to have what it left out: check before pushing.
  if (m.delta) {
    std::vector<std::string> missing;
    std::mutex mu;
    std::vector<BlobJob> checks;
    for (const auto& j : uploads)
      if (omitted.count(j.digest) && !complete[j.plan]) checks.push_back(j);
    auto r = parallel_try(checks.size(), o.jobs, [&](std::size_t i) -> Result<void> {
      auto has = client.blob_exists(checks[i].repo, checks[i].digest);
      if (!has) return has.error();
      if (!has.value()) {
        // It may sit in another repository of this bundle: mount it from there.
        for (const auto& p : plans) {
          if (p.repo == checks[i].repo) continue;
          auto there = client.blob_exists(p.repo, checks[i].digest);
          if (there && there.value()) {
            auto mounted = client.mount_blob(checks[i].repo, checks[i].digest, p.repo);
            if (mounted && mounted.value()) return {};
          }
        }
        std::lock_guard l(mu);
        missing.push_back(checks[i].digest + " (for " + checks[i].repo.str() + ")");
      }
      return {};
    });
    if (!r) return at_site(r.error());
    if (!missing.empty()) {
      std::sort(missing.begin(), missing.end());
      return op_error("this delta bundle leaves out " + std::to_string(missing.size()) +
                      " blob(s) the site registry does not have: " + join(missing, ", ") +
                      "; import the bundle it was made against first, or make a full bundle");
    }
  }

  progress.begin("import", total);
  auto push = [&](std::size_t i) -> Result<void> {
    if (!needed[i]) return {};
    const BlobJob& j = jobs[i];
    const BundleBlob* b = blobs->find(j.digest);
    bool mounted = false;
    if (j.mount_from) {
      auto mount = client.mount_blob(j.repo, j.digest, *j.mount_from);
      if (!mount) return mount.error();
      mounted = mount.value();
    }
    Result<void> r;
    if (mounted) {
      r = {};
    } else if (!b) {
      r = op_error("the registry did not mount it" + (j.mount_from ? " from " + j.mount_from->str() : std::string()) +
                   ", and this delta bundle does not carry it");
    } else {
      // zstd blobs are decoded as they go out, never whole in memory.
      auto src = BundleBlobs::content_source(*b, [&](std::uint64_t n) { progress.advance(n); });
      r = src ? client.push_blob(j.repo, j.digest, **src) : Result<void>(src.error());
    }
    if (!r) return op_error(j.repo.str() + "@" + j.digest + ": " + r.error().message);
    std::lock_guard l(report_mu);
    if (mounted) ++report.blobs_mounted;
    else {
      ++report.blobs_pushed;
      report.bytes_pushed += b ? b->stored_size() : 0;
    }
    return {};
  };
  if (auto r = parallel_try(uploads.size(), o.jobs, [&](std::size_t i) { return push(i); }); !r) return at_site(r.error());
  if (auto r = parallel_try(mounts.size(), o.jobs, [&](std::size_t i) { return push(uploads.size() + i); }); !r)
    return at_site(r.error());

  // 4. Manifests, in order, those the site lacked.
  auto r = parallel_try(plans.size(), o.jobs, [&](std::size_t i) -> Result<void> {
    const PlacedImage& p = plans[i];
    for (std::size_t k = first_manifest[i]; k < first_manifest[i + 1]; ++k) {
      const auto& [ref, d] = manifest_jobs[k];
      if (manifest_there[k]) {
        std::lock_guard l(report_mu);
        ++report.manifests_present;
        continue;
      }
      if (auto put = client.put_manifest(ref, manifests.at(d).media_type, manifests.at(d).bytes); !put) {
        std::string hint;
        if (p.sparse && k + 1 == first_manifest[i + 1])
          hint = "; this bundle carries index " + d + " without some of its platforms, which registries that check an index's "
                 "manifests refuse: make the bundle again with this gpubundle, which sends a filtered index (docs/lock.md)";
        // The client names the reference already; say it once.
        const std::string& why = put.error().message;
        return op_error((starts_with(why, ref.str() + ": ") ? why : ref.str() + ": " + why) + hint);
      }
      std::lock_guard l(report_mu);
      ++report.manifests_pushed;
    }
    std::lock_guard l(report_mu);
    report.destinations.push_back(p.tagged.str());
    return {};
  });
  if (!r) return at_site(r.error());
  std::sort(report.destinations.begin(), report.destinations.end());
  progress.end(std::to_string(report.blobs_pushed) + " blobs pushed (" + human_bytes(report.bytes_pushed) + "), " +
               std::to_string(report.blobs_mounted) + " mounted, " + std::to_string(report.blobs_present) + " already there");

  report.bytes_hashed = verified.bytes;

  // 5. The install kit, made before the first push.
  if (kit)
    if (auto w = write_site_kit(*kit, lock, o.kit_dir); !w) return w.error();
  return report;
}

}  // namespace gb::bundles
