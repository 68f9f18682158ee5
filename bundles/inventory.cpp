#include "bundles/inventory.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/log.hpp"
#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry.hpp"
#include "mirror/store.hpp"

namespace gb::bundles {

namespace {

// Repositories to walk: those the lock places at the site, else the
// registry's catalog under the prefix.
Result<std::vector<recipes::Reference>> repositories(mirror::RegistryClient& client, const kit::SiteRegistry& site, kit::Layout layout,
                                            const std::optional<recipes::Lock>& lock) {
  std::vector<recipes::Reference> repos;
  if (lock) {
    auto placements = kit::place_images(*lock, site, layout);
    if (!placements) return placements.error();
    for (const auto& p : *placements) {
      recipes::Reference r = p.destination;
      r.tag.clear();
      r.digest.clear();
      if (std::find(repos.begin(), repos.end(), r) == repos.end()) repos.push_back(r);
    }
    return repos;
  }
  std::string url = site.url() + "/v2/_catalog?n=1000";
  while (!url.empty()) {
    auto body = client.get_url(url);
    if (!body) return op_error(body.error().message + "; the registry does not list its repositories to us: give --lock or --bundle");
    auto j = nlohmann::json::parse(body.value(), nullptr, false);
    if (!j.is_object() || !j.contains("repositories") || !j["repositories"].is_array())
      return op_error(site.str() + ": malformed _catalog answer");
    for (const auto& name : j["repositories"]) {
      if (!name.is_string()) return op_error(site.str() + ": malformed _catalog answer");
      std::string n = name.get<std::string>();
      if (!site.prefix.empty() && !starts_with(n, site.prefix + "/")) continue;
      recipes::Reference r;
      r.registry = site.host;
      r.repository = n;
      repos.push_back(r);
    }
    url.clear();
    if (j["repositories"].size() == 1000)  // next page starts after the last name
      url = site.url() + "/v2/_catalog?n=1000&last=" + j["repositories"].back().get<std::string>();
  }
  return repos;
}

// Each manifest is fetched once (`seen`), and indexes nest at most
// oci::k_max_index_depth levels, so a hostile registry cannot keep us here.
Result<void> walk(mirror::RegistryClient& client, const recipes::Reference& ref, std::set<std::string>& out, std::set<std::string>& seen, int depth = 0) {
  if (depth > mirror::oci::k_max_index_depth)
    return op_error(ref.str() + ": index nesting deeper than " + std::to_string(mirror::oci::k_max_index_depth) + " levels");
  auto m = client.get_manifest(ref);
  if (!m) return op_error(ref.str() + ": " + m.error().message);
  out.insert(m->digest);
  if (!seen.insert(m->digest).second) return {};
  if (m->index()) {
    for (const auto& c : m->manifests) {
      if (seen.count(c.digest)) continue;
      recipes::Reference child = ref;
      child.tag.clear();
      child.digest = c.digest;
      auto exists = client.head_manifest(child);
      if (exists && exists.value())  // sparse indexes lack other platforms
        if (auto r = walk(client, child, out, seen, depth + 1); !r) return r;
    }
    return {};
  }
  out.insert(m->config.digest);
  for (const auto& l : m->layers) out.insert(l.digest);
  return {};
}

}  // namespace

std::string inventory_json(const Inventory& inventory) {
  nlohmann::json j = {{"kind", "Inventory"},
                      {"schemaVersion", 1},
                      {"source", inventory.source},
                      {"repositories", inventory.repositories},
                      {"blobs", std::vector<std::string>(inventory.blobs.begin(), inventory.blobs.end())}};
  return j.dump(2) + "\n";
}

Result<std::optional<Inventory>> parse_inventory(const std::string& text, const std::string& label) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("kind", "") != "Inventory") return std::optional<Inventory>{};
  if (!j.contains("blobs") || !j["blobs"].is_array()) return input_error(label + ": inventory without a blobs list");
  Inventory inv;
  inv.source = j.value("source", "");
  for (const auto& d : j["blobs"]) {
    if (!d.is_string()) return input_error(label + ": inventory blobs must be digest strings");
    inv.blobs.insert(d.get<std::string>());
  }
  return std::optional<Inventory>{std::move(inv)};
}

Result<Inventory> store_inventory(mirror::Store& store, const std::string& label) {
  Inventory inv;
  inv.source = "store " + label;
  auto reachable = store.reachable();
  if (!reachable) return reachable.error();
  inv.blobs.insert(reachable->begin(), reachable->end());
  auto images = store.images();
  if (!images) return images.error();
  inv.repositories = images->size();
  return inv;
}

Result<Inventory> registry_inventory(mirror::RegistryClient& client, const kit::SiteRegistry& site, kit::Layout layout,
                                     const std::optional<recipes::Lock>& lock) {
  Inventory inv;
  inv.source = site.str();
  auto repos = repositories(client, site, layout, lock);
  if (!repos) return repos.error();
  inv.repositories = repos->size();
  for (const auto& repo : *repos) {
    std::set<std::string> seen;  // per repository: a digest is reachable in each
    auto tags = client.list_tags(repo);
    if (!tags) {
      log_verbose(repo.str() + ": " + tags.error().message + " (not there yet)");
      continue;
    }
    for (const auto& t : tags.value()) {
      recipes::Reference ref = repo;
      ref.tag = t;
      if (auto r = walk(client, ref, inv.blobs, seen); !r) return r.error();
    }
  }
  return inv;
}

}  // namespace gb::bundles
