#pragma once
// What a site already has, for delta bundles: `gpubundle inventory` writes
// it at the site, `bundle create --since` reads it (bundles/delta.hpp).
//
// Inventory file (JSON, two-space indent):
//   {"kind": "Inventory", "schemaVersion": 1, "source": "registry.site:5000/gpu" | "store DIR",
//    "repositories": N, "blobs": ["sha256:...", ...]}   blobs sorted, manifests included.

#include <cstddef>
#include <optional>
#include <set>
#include <string>

#include "common/error.hpp"
#include "kit/kit.hpp"
#include "recipes/lock.hpp"

namespace gb::mirror {
class RegistryClient;
class Store;
}

namespace gb::bundles {

struct Inventory {
  std::string source;            // "registry.site:5000/gpu" or "store DIR"
  std::size_t repositories = 0;  // walked
  std::set<std::string> blobs;   // digests, manifests included
};

std::string inventory_json(const Inventory& inventory);
// Nothing when `text` is JSON of another kind; an error naming `label` when
// it is an inventory without a blobs list.
Result<std::optional<Inventory>> parse_inventory(const std::string& text, const std::string& label);

// Every blob the store's images reach.
Result<Inventory> store_inventory(mirror::Store& store, const std::string& label);

// Every blob the site registry's repositories reach, through every tag and
// manifest: the repositories `lock` places at the site when given, else the
// registry's catalog under the site prefix. A repository that is not there
// yet is skipped.
Result<Inventory> registry_inventory(mirror::RegistryClient& client, const kit::SiteRegistry& site, kit::Layout layout,
                                     const std::optional<recipes::Lock>& lock);

}  // namespace gb::bundles
