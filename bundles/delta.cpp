#include "bundles/delta.hpp"

#include "bundles/bundle.hpp"
#include "bundles/closure.hpp"
#include "bundles/inventory.hpp"
#include "common/files.hpp"
#include "mirror/store.hpp"

namespace gb::bundles {

Result<std::set<std::string>> blobs_site_has(const std::string& since, const mirror::Store& store) {
  auto text = read_file(since);
  if (!text) return text.error();
  std::set<std::string> have;
  if (!text->empty() && text->front() == '{') {
    auto inventory = parse_inventory(text.value(), since);
    if (!inventory) return inventory.error();
    if (*inventory) return std::move((*inventory)->blobs);
    auto old = recipes::parse_lock(text.value(), since);
    if (!old) return input_error(since + ": neither an inventory nor a lock: " + old.error().message);
    // What the site got of each: a filtered index's children only, never
    // other platforms the store may hold of the same index.
    for (const auto& img : old->images) {
      std::map<std::string, ClosureBlob> blobs;
      if (site_image_closure(store, *old, img, blobs))
        for (const auto& [d, b] : blobs) have.insert(d);
    }
    return have;
  }
  auto m = read_volume_manifest(since);
  if (!m) return input_error(since + ": neither an inventory, a lock nor a bundle: " + m.error().message);
  for (const auto& img : m->images) have.insert(img.blobs.begin(), img.blobs.end());
  return have;
}

}  // namespace gb::bundles
