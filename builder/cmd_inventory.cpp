#include <CLI/CLI.hpp>
#include <cstdio>

#include "builder/cli.hpp"
#include "bundles/bundle.hpp"
#include "bundles/inventory.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "kit/kit.hpp"
#include "mirror/registry.hpp"
#include "mirror/store.hpp"

namespace gb::cli {

namespace {

struct InventoryArgs {
  std::string registry, store_dir, lock, bundle, registry_config, layout = "strip-host", out;
};

int run_inventory(Globals& g, const InventoryArgs& a) {
  // Without --registry, the store: inventory's --store, else the global one
  // (--store before the command, $GPUBUNDLE_STORE), else ./gpubundle-store.
  if (!a.registry.empty() && !a.store_dir.empty()) throw Error(ErrorKind::Input, "inventory needs exactly one of --registry or --store");
  std::string store_dir = a.store_dir.empty() ? g.store.string() : a.store_dir;
  bundles::Inventory inv;
  if (a.registry.empty()) {
    if (a.store_dir.empty() && !g.store_given && !std::filesystem::exists(g.store / "oci-layout"))
      throw Error(ErrorKind::Input, "inventory needs --registry, or --store (no store at " + store_dir + ")");
    mirror::Store store = mirror::Store::open(store_dir, mirror::StoreAccess::Read).value_or_throw();
    inv = bundles::store_inventory(store, store_dir).value_or_throw();
  } else {
    auto site = kit::SiteRegistry::parse(a.registry).value_or_throw();
    auto layout = kit::parse_layout(a.layout).value_or_throw();
    std::optional<recipes::Lock> lock;
    if (!a.lock.empty()) lock = recipes::load_lock(a.lock).value_or_throw();
    if (!a.bundle.empty()) lock = recipes::parse_lock(bundles::read_volume_manifest(a.bundle).value_or_throw().lock_json, a.bundle).value_or_throw();
    mirror::RegistryConfig config;
    if (!a.registry_config.empty()) config = mirror::RegistryConfig::load(a.registry_config).value_or_throw();
    if (site.plain_http) config.hosts[site.host].plain_http = true;
    mirror::RegistryClient client(config);
    inv = bundles::registry_inventory(client, site, layout, lock).value_or_throw();
  }
  std::string text = bundles::inventory_json(inv);
  if (!a.out.empty()) write_atomic(a.out, text).value_or_throw();
  if (g.json || a.out.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
  log_info("inventory of " + inv.source + ": " + std::to_string(inv.blobs.size()) + " blobs in " + std::to_string(inv.repositories) +
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
      "Without --registry it lists a store instead: --store, before or after the command, or $GPUBUNDLE_STORE. "
      "Carry the file to the build machine: `bundle create --since INVENTORY` then ships only what is missing.",
      "gpubundle inventory --registry registry.site.internal:5000/gpu --bundle site-a.bundle -o site.inventory.json",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto a = std::make_shared<InventoryArgs>();
        app.add_option("--registry", a->registry, "Site registry HOST[:PORT][/PREFIX]; http://HOST... for plain HTTP");
        app.add_option("--store", a->store_dir, "A gpubundle store folder instead of a registry (default: the global --store)");
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
