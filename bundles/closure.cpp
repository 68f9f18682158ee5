#include "bundles/closure.hpp"

#include <algorithm>

#include "mirror/oci.hpp"
#include "mirror/store.hpp"

namespace gb {

namespace {

Result<void> walk(const Store& store, const std::string& ref, const std::string& digest, const std::string& media_type,
                  std::map<std::string, ClosureBlob>& out, std::vector<std::string>& order, int depth) {
  if (std::find(order.begin(), order.end(), digest) != order.end()) return {};
  if (depth > oci::k_max_index_depth)
    return op_error("image " + ref + ": index " + digest + " nests deeper than " + std::to_string(oci::k_max_index_depth) + " levels");
  auto bytes = store.read_blob(digest);
  if (!bytes) return op_error("image " + ref + ": manifest " + digest + " is not in the store: run `gpubundle mirror`");
  auto m = oci::parse_manifest(bytes.value(), media_type);
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
  std::vector<oci::Descriptor> refs = m->layers;
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

Result<std::vector<std::string>> image_closure(const Store& store, const std::string& ref, const std::string& digest,
                                               const std::string& media_type, std::map<std::string, ClosureBlob>& out) {
  std::vector<std::string> order;
  if (auto r = walk(store, ref, digest, media_type, out, order, 0); !r) return r.error();
  return order;
}

}  // namespace gb
