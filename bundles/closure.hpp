#pragma once
// What one stored image reaches: its manifest (or sparse index and the child
// manifests the store holds), configs and layers.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "recipes/lock.hpp"

namespace gb::mirror {
class Store;
}

namespace gb::bundles {

struct ClosureBlob {
  std::uint64_t size = 0;
  std::string media_type;
  bool manifest = false;  // manifest or index
};

// Adds every blob `digest` reaches to `out` (keyed by digest) and returns
// them in walk order. Fails naming `ref` when the store lacks one.
Result<std::vector<std::string>> image_closure(const mirror::Store& store, const std::string& ref, const std::string& digest,
                                               const std::string& media_type, std::map<std::string, ClosureBlob>& out);

// One lock image as the site gets it. Without a siteDigest: image_closure of
// the stored digest. With one: the filtered index made again from the stored
// upstream index and the image's platforms (mirror/oci.hpp site_index), which
// must hash to the lock's siteDigest, then the upstream index and the closure
// of each carried child, nothing else the store may hold of that index.
struct SiteImage {
  std::string digest;      // what the site gets: lock at_site()
  std::string media_type;
  std::string index_bytes;  // the filtered index, when there is one (it is in no store)
  std::vector<std::string> blobs;  // walk order
};
Result<SiteImage> site_image_closure(const mirror::Store& store, const recipes::Lock& lock, const recipes::LockImage& image, std::map<std::string, ClosureBlob>& out);

}  // namespace gb::bundles
