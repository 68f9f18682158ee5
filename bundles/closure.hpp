#pragma once
// What one stored image reaches: its manifest (or sparse index and the child
// manifests the store holds), configs and layers.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb {

class Store;

struct ClosureBlob {
  std::uint64_t size = 0;
  std::string media_type;
  bool manifest = false;  // manifest or index
};

// Adds every blob `digest` reaches to `out` (keyed by digest) and returns
// them in walk order. Fails naming `ref` when the store lacks one.
Result<std::vector<std::string>> image_closure(const Store& store, const std::string& ref, const std::string& digest,
                                               const std::string& media_type, std::map<std::string, ClosureBlob>& out);

}  // namespace gb
