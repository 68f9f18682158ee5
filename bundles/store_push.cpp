#include "bundles/store_push.hpp"

#include <system_error>

#include "bundles/bundle_blobs.hpp"
#include "bundles/placed_images.hpp"
#include "common/parallel.hpp"
#include "mirror/registry.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"

namespace gb::bundles {

Result<StorePushReport> push_stored_images(const mirror::Store& store, const std::vector<std::string>& refs, const StorePushOptions& o,
                                           Progress& progress) {
  if (refs.empty()) return input_error("store push: name at least one stored image");
  auto placed = placed_store_images(store, refs, o.registry, o.layout);
  if (!placed) return placed.error();
  mirror::PushPlan plan;
  StorePushReport report;
  for (const auto& p : placed->images) {
    plan.images.push_back({p.repo, p.tagged, p.manifests, p.blobs, ""});
    report.images.push_back({p.source, p.tagged.str(), p.manifests.back()});
  }
  for (const auto& [d, pm] : placed->manifests) plan.manifests[d] = {pm.media_type, pm.bytes};

  mirror::RegistryConfig config = o.config;
  if (o.registry.plain_http) config.hosts[o.registry.host].plain_http = true;
  mirror::ClientOptions co;
  co.max_parallel = o.jobs;
  mirror::RegistryClient client(config, co);
  mirror::PushOptions po;
  po.jobs = o.jobs;
  po.stored_size = [&](const std::string& d) -> std::uint64_t {
    std::error_code ec;
    auto n = std::filesystem::file_size(store.blob_path(d), ec);
    return ec ? 0 : n;
  };
  po.prepare = [&](const std::set<std::string>& uploads) -> Result<void> {
    std::vector<std::string> list(uploads.begin(), uploads.end());
    return parallel_try(list.size(), o.jobs, [&](std::size_t i) -> Result<void> {
      auto hex = signing::sha256_file_hex(store.blob_path(list[i]));
      if (!hex) return hex.error();
      if ("sha256:" + hex.value() != list[i])
        return op_error("store: blob " + list[i] + " does not hash to its name (run `gpubundle store fsck --repair`); nothing was pushed");
      return {};
    });
  };
  po.open_blob = [&](const std::string& d, const std::function<void(std::uint64_t)>& on_bytes) -> Result<std::unique_ptr<mirror::BlobSource>> {
    std::uint64_t size = po.stored_size(d);
    if (size == 0 && !store.has_blob(d)) return op_error("store: blob " + d + " is missing");
    return BundleBlobs::source(BundleBlob{"", {{store.blob_path(d), 0, size}}}, on_bytes);
  };
  auto pushed = mirror::push_images(client, plan, po, progress);
  if (!pushed) return pushed.error();
  report.push = std::move(pushed.value());
  return report;
}

}  // namespace gb::bundles
