#pragma once
// What a delta bundle may leave out: the blobs the site already has, read
// from an inventory (`gpubundle inventory`), an old lock (what its images reach
// in this store) or an earlier bundle (everything it carried or assumed).

#include <set>
#include <string>

#include "common/error.hpp"

namespace gb::mirror {
class Store;
}

namespace gb::bundles {

Result<std::set<std::string>> blobs_site_has(const std::string& since, const mirror::Store& store);

}  // namespace gb::bundles
