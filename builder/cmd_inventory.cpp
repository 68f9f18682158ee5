#include <CLI/CLI.hpp>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "builder/cli.hpp"
#include "bundles/bundle.hpp"
#include "bundles/kit.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry.hpp"
#include "mirror/store.hpp"

namespace gb::cli {

namespace {

// Inventory file (what `bundle create --since` reads):
//   {"kind": "Inventory", "schemaVersion": 1, "source": "registry.site:5000/gpu" | "store DIR",
//    "repositories": N, "blobs": ["sha256:...", ...]}   blobs sorted, manifests included.
std::string inventory_json(const std::string& source, std::size_t repos, const std::set<std::string>& blobs) {
  nlohmann::json j = {{"kind", "Inventory"}, {"schemaVersion", 1}, {"source", source}, {"repositories", repos},
                      {"blobs", std::vector<std::string>(blobs.begin(), blobs.end())}};
  return j.dump(2) + "\n";
}

// Repositories to walk: those a lock (or a bundle's lock) places at the site,
// else the registry's catalog under the prefix.
std::vector<Reference> repositories(RegistryClient& client, const kit::SiteRegistry& site, kit::Layout layout,
                                    const std::string& lock_path, const std::string& bundle_path) {
  std::vector<Reference> repos;
  std::optional<Lock> lock;
  if (!lock_path.empty()) lock = load_lock(lock_path).value_or_throw();
  if (!bundle_path.empty()) lock = parse_lock(read_volume_manifest(bundle_path).value_or_throw().lock_json, bundle_path).value_or_throw();
  if (lock) {
    for (const auto& p : kit::place_images(*lock, site, layout).value_or_throw()) {
      Reference r = p.destination;
      r.tag.clear();
      r.digest.clear();
      if (std::find(repos.begin(), repos.end(), r) == repos.end()) repos.push_back(r);
    }
    return repos;
  }
  std::string url = site.url() + "/v2/_catalog?n=1000";
  while (!url.empty()) {
    auto body = client.get_url(url);
    if (!body)
      throw Error(ErrorKind::Failed, body.error().message + "; the registry does not list its repositories to us: give --lock or --bundle");
    auto j = nlohmann::json::parse(body.value(), nullptr, false);
    if (!j.is_object() || !j.contains("repositories")) throw Error(ErrorKind::Failed, site.str() + ": malformed _catalog answer");
    for (const auto& name : j["repositories"]) {
      std::string n = name.get<std::string>();
      if (!site.prefix.empty() && !starts_with(n, site.prefix + "/")) continue;
      Reference r;
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
void walk(RegistryClient& client, const Reference& ref, std::set<std::string>& out, std::set<std::string>& seen, int depth = 0) {
  if (depth > oci::k_max_index_depth)
    throw Error(ErrorKind::Failed, ref.str() + ": index nesting deeper than " + std::to_string(oci::k_max_index_depth) + " levels");
  auto m = client.get_manifest(ref);
  if (!m) throw Error(ErrorKind::Failed, ref.str() + ": " + m.error().message);
  out.insert(m->digest);
  if (!seen.insert(m->digest).second) return;
  if (m->index()) {
    for (const auto& c : m->manifests) {
      if (seen.count(c.digest)) continue;
      Reference child = ref;
      child.tag.clear();
      child.digest = c.digest;
      auto exists = client.head_manifest(child);
      if (exists && exists.value()) walk(client, child, out, seen, depth + 1);  // sparse indexes lack other platforms
    }
    return;
  }
  out.insert(m->config.digest);
  for (const auto& l : m->layers) out.insert(l.digest);
}

struct Args {
  std::string registry, store_dir, lock, bundle, registry_config, layout = "strip-host", out;
};

int run_inventory(Globals& g, const Args& a) {
  if (a.registry.empty() == a.store_dir.empty()) throw Error(ErrorKind::Input, "inventory needs exactly one of --registry or --store");
  std::set<std::string> blobs;
  std::string source;
  std::size_t repo_count = 0;
  if (!a.store_dir.empty()) {
    Store store = Store::open(a.store_dir, StoreAccess::Read).value_or_throw();
    for (const auto& d : store.reachable().value_or_throw()) blobs.insert(d);
    source = "store " + a.store_dir;
    repo_count = store.images().value_or_throw().size();
  } else {
    auto site = kit::SiteRegistry::parse(a.registry).value_or_throw();
    RegistryConfig config;
    if (!a.registry_config.empty()) config = RegistryConfig::load(a.registry_config).value_or_throw();
    if (site.plain_http) {
      config.hosts[site.host].plain_http = true;
    }
    RegistryClient client(config);
    auto repos = repositories(client, site, kit::parse_layout(a.layout).value_or_throw(), a.lock, a.bundle);
    repo_count = repos.size();
    for (const auto& repo : repos) {
      std::set<std::string> seen;  // per repository: a digest is reachable in each
      auto tags = client.list_tags(repo);
      if (!tags) {
        log::verbose(repo.str() + ": " + tags.error().message + " (not there yet)");
        continue;
      }
      for (const auto& t : tags.value()) {
        Reference ref = repo;
        ref.tag = t;
        walk(client, ref, blobs, seen);
      }
    }
    source = site.str();
  }
  std::string text = inventory_json(source, repo_count, blobs);
  if (!a.out.empty()) write_atomic(a.out, text).value_or_throw();
  if (g.json || a.out.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
  log::info("inventory of " + source + ": " + std::to_string(blobs.size()) + " blobs in " + std::to_string(repo_count) +
            " repositories" + (a.out.empty() ? "" : ", written to " + a.out));
  return 0;
}

}  // namespace

CommandSpec inventory_command() {
  return {
      "inventory",
      "List the blobs a site registry (or a store) already has, for delta bundles",
      "Runs at the site. Walks the repositories a lock or an imported bundle places in the registry (or, with neither, "
      "the registry's catalog under the prefix), every tag and manifest, and writes the digests of every blob they reach. "
      "Carry the file to the build machine: `bundle create --since INVENTORY` then ships only what is missing.",
      "gpubundle inventory --registry registry.site.internal:5000/gpu --bundle site-a.bundle -o site.inventory.json",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto a = std::make_shared<Args>();
        app.add_option("--registry", a->registry, "Site registry HOST[:PORT][/PREFIX]; http://HOST... for plain HTTP");
        app.add_option("--store", a->store_dir, "A gpubundle store folder instead of a registry");
        app.add_option("--lock", a->lock, "Walk the repositories this lock places at the site");
        app.add_option("--bundle", a->bundle, "Walk the repositories this (imported) bundle placed at the site");
        app.add_option("--registry-config", a->registry_config, "Per-host TLS and credentials");
        app.add_option("--layout", a->layout, "strip-host (default) or keep-host, as at import");
        app.add_option("-o,--output", a->out, "Write the inventory here (default: stdout)");
        return [&g, a] { return run_inventory(g, *a); };
      },
  };
}

}  // namespace gb::cli
