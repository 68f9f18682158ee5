#include "bundles/closure.hpp"

#include <algorithm>

#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"

namespace gb::bundles {

namespace {

Result<void> walk(const mirror::Store& store, const std::string& ref, const std::string& digest, const std::string& media_type,
                  std::map<std::string, ClosureBlob>& out, std::vector<std::string>& order, int depth) {
  if (std::find(order.begin(), order.end(), digest) != order.end()) return {};
  if (depth > mirror::oci::k_max_index_depth)
    return op_error("image " + ref + ": index " + digest + " nests deeper than " + std::to_string(mirror::oci::k_max_index_depth) + " levels");
  auto bytes = store.read_blob(digest);
  if (!bytes) return op_error("image " + ref + ": manifest " + digest + " is not in the store: run `gpubundle mirror`");
  auto m = mirror::oci::parse_manifest(bytes.value(), media_type);
  if (!m) return op_error("image " + ref + ": " + m.error().message);
  order.push_back(digest);
  out[digest] = {bytes->size(), m->media_type, true};
  if (m->index()) {
    bool any = false;
    for (const auto& child : m->manifests) {
      if (!store.has_blob(child.digest)) continue;  // sparse: a platform not mirrored
      any = true;
      if (auto r = walk(store, ref, child.digest, child.media_type, out, order, depth + 1); !r) return r;
    }
    if (!any) return op_error("image " + ref + ": no platform of index " + digest + " is in the store: run `gpubundle mirror`");
    return {};
  }
  std::vector<mirror::oci::Descriptor> refs = m->layers;
  refs.insert(refs.begin(), m->config);
  for (const auto& d : refs) {
    if (!store.has_blob(d.digest, d.size))
      return op_error("image " + ref + ": blob " + d.digest + " is not in the store: run `gpubundle mirror`");
    if (std::find(order.begin(), order.end(), d.digest) == order.end()) order.push_back(d.digest);
    if (!out.count(d.digest)) out[d.digest] = {d.size, d.media_type, false};
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> image_closure(const mirror::Store& store, const std::string& ref, const std::string& digest,
                                               const std::string& media_type, std::map<std::string, ClosureBlob>& out) {
  std::vector<std::string> order;
  if (auto r = walk(store, ref, digest, media_type, out, order, 0); !r) return r.error();
  return order;
}

Result<SiteImage> site_image_closure(const mirror::Store& store, const recipes::Lock& lock, const recipes::LockImage& image, std::map<std::string, ClosureBlob>& out) {
  auto stored = store.find_image(image.source);
  if (!stored) return op_error("image " + image.source + " is not in the store " + store.root().string() + ": run `gpubundle mirror`");
  if (stored->digest != image.digest)
    return op_error("image " + image.source + ": the store has " + stored->digest + " but the lock says " + image.digest +
                    ": run `gpubundle mirror` with this lock");
  SiteImage site{stored->digest, stored->media_type, {}, {}};
  auto whole = [&]() -> Result<SiteImage> {
    auto blobs = image_closure(store, image.source, stored->digest, stored->media_type, out);
    if (!blobs) return blobs.error();
    site.blobs = std::move(blobs.value());
    return site;
  };
  if (image.built || !mirror::oci::is_index(stored->media_type)) {
    if (!image.site_digest.empty()) return op_error("image " + image.source + ": a siteDigest, but the store holds no index for it");
    return whole();
  }
  auto bytes = store.read_blob(stored->digest);
  if (!bytes) return op_error("image " + image.source + ": index " + stored->digest + " is not in the store: run `gpubundle mirror`");
  auto upstream = mirror::oci::parse_manifest(std::move(bytes.value()), stored->media_type);
  if (!upstream) return op_error("image " + image.source + ": " + upstream.error().message);
  auto filtered = mirror::oci::site_index(*upstream, lock.platforms_of(image));
  if (!filtered) return op_error("image " + image.source + ": " + filtered.error().message);
  if (!*filtered && image.site_digest.empty()) return whole();
  // A lock mirrored before filtered indexes names none: its bundle would carry
  // an index that registries refuse (docs/lock.md).
  if (image.site_digest.empty())
    return op_error("image " + image.source + ": the lock carries only " + join(lock.platforms_of(image), ", ") + " of index " +
                    stored->digest + " but names no siteDigest for it: run `gpubundle mirror` with this lock, which records one");
  if (!*filtered || (*filtered)->digest != image.site_digest)
    return op_error("image " + image.source + ": its platforms give the site " +
                    (*filtered ? (*filtered)->digest : upstream->digest + " (the whole index)") + ", not the lock's siteDigest " +
                    image.site_digest + ": run `gpubundle mirror` with this lock");
  const mirror::oci::Manifest& index = **filtered;
  site.digest = index.digest;
  site.index_bytes = index.bytes;
  out[upstream->digest] = {upstream->bytes.size(), upstream->media_type, true};
  out[index.digest] = {index.bytes.size(), index.media_type, true};
  site.blobs = {index.digest, upstream->digest};
  for (const auto& child : index.manifests) {
    auto blobs = image_closure(store, image.source, child.digest, child.media_type, out);
    if (!blobs) return blobs.error();
    for (auto& d : blobs.value())
      if (std::find(site.blobs.begin(), site.blobs.end(), d) == site.blobs.end()) site.blobs.push_back(std::move(d));
  }
  return site;
}

}  // namespace gb::bundles
