#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "bundles/store_push.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/store.hpp"

namespace gb::cli {

namespace {

int store_ls(const Globals& g) {
  mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Read).value_or_throw();
  auto images = store.images().value_or_throw();
  std::map<std::string, mirror::ImageRow> rows;
  std::vector<mirror::ChartRow> charts;
  if (auto cat = store.catalog(); cat) {
    if (auto r = (*cat)->images(); r)
      for (auto& row : *r) rows[row.ref] = row;
    if (auto c = (*cat)->charts(); c) charts = *c;
  }
  if (g.json) {
    nlohmann::json j = {{"images", nlohmann::json::array()}, {"charts", nlohmann::json::array()}};
    for (const auto& i : images) {
      auto it = rows.find(i.ref);
      nlohmann::json e = {{"ref", i.ref}, {"digest", i.digest}, {"mediaType", i.media_type}, {"platforms", i.platforms}};
      if (it != rows.end()) {
        e["bytes"] = it->second.size;
        e["fetchedAt"] = it->second.fetched_at;
        e["platforms"] = split(it->second.platforms, ',');
      }
      j["images"].push_back(e);
    }
    for (const auto& c : charts) j["charts"].push_back({{"name", c.name}, {"version", c.version}, {"file", c.file}, {"sha256", c.sha256}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::size_t w = 5;
  for (const auto& i : images) w = std::max(w, i.ref.size());
  std::printf("%-*s  %-19s  %10s  %-24s  %s\n", static_cast<int>(w), "IMAGE", "DIGEST", "SIZE", "PLATFORMS", "FETCHED");
  for (const auto& i : images) {
    auto it = rows.find(i.ref);
    std::string size = it != rows.end() ? human_bytes(it->second.size) : "-";
    std::string plats = it != rows.end() ? it->second.platforms : join(i.platforms, ",");
    std::string when = it != rows.end() ? it->second.fetched_at : "-";
    std::printf("%-*s  %-19s  %10s  %-24s  %s\n", static_cast<int>(w), i.ref.c_str(), i.digest.substr(0, 19).c_str(), size.c_str(),
                plats.c_str(), when.c_str());
  }
  for (const auto& c : charts) std::printf("chart %s %s  %s\n", c.name.c_str(), c.version.c_str(), ("charts/" + c.file).c_str());
  std::printf("%zu images, %zu charts\n", images.size(), charts.size());
  return 0;
}

int store_fsck(const Globals& g, bool repair) {
  mirror::Store store = mirror::Store::open(g.store, repair ? mirror::StoreAccess::Exclusive : mirror::StoreAccess::Shared, store_lock_wait_seconds()).value_or_throw();
  auto rep = store.fsck(repair).value_or_throw();
  if (g.json) {
    nlohmann::json j = {{"ok", rep.problems.empty()}, {"blobs", rep.blobs},       {"bytes", rep.bytes},
                        {"images", rep.images},       {"problems", rep.problems}, {"removed", rep.repaired}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const auto& r : rep.repaired) std::printf("removed %s (corrupt)\n", r.c_str());
    for (const auto& p : rep.problems) std::printf("%s\n", p.c_str());
    if (!rep.repaired.empty())
      log_info("fsck --repair: removed " + std::to_string(rep.repaired.size()) +
                " corrupt blobs; run `gpubundle mirror LOCK` with each lock that needs them to fetch them again");
    log_info("fsck: " + std::to_string(rep.images) + " images, " + std::to_string(rep.blobs) + " blobs (" + human_bytes(rep.bytes) +
              ") checked, " + std::to_string(rep.problems.size()) + " problems");
  }
  return rep.problems.empty() ? 0 : 1;
}

int store_gc(const Globals& g) {
  mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Exclusive, store_lock_wait_seconds()).value_or_throw();
  auto rep = store.gc().value_or_throw();
  // Temp files were already swept when the exclusive lock was taken: they count too.
  rep.temps_removed += store.swept().temps_removed;
  rep.bytes_freed += store.swept().bytes_freed;
  if (g.json) {
    nlohmann::json j = {{"blobsRemoved", rep.blobs_removed}, {"tempFilesRemoved", rep.temps_removed}, {"bytesFreed", rep.bytes_freed}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("gc: removed %zu unreferenced blobs and %zu temp files, %s freed\n", rep.blobs_removed, rep.temps_removed,
                human_bytes(rep.bytes_freed).c_str());
  }
  return 0;
}

}  // namespace

CLI::Option* PushTarget::declare(CLI::App& app, const std::string& flag, const std::string& help) {
  app.add_option("--layout", layout, "strip-host (default) or keep-host, as for import");
  if (!app.get_option_no_throw("--registry-config"))
    app.add_option("--registry-config", registry_config, "Per-host TLS and credentials (docs/registries.md)");
  return app.add_option(flag, registry, help);
}

std::vector<Pushed> PushTarget::push(const Globals& g, const std::vector<std::string>& refs) const {
  bundles::StorePushOptions o;
  o.registry = kit::SiteRegistry::parse(registry).value_or_throw();
  o.layout = kit::parse_layout(layout).value_or_throw();
  if (!registry_config.empty()) o.config = mirror::RegistryConfig::load(registry_config).value_or_throw();
  if (const mirror::HostConfig* h = o.config.host(o.registry.host); h && h->plain_http) o.registry.plain_http = true;
  // Shared: pushing only reads, and a mirror or gc waits for it.
  mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Shared, store_lock_wait_seconds()).value_or_throw();
  auto progress = make_progress(g.quiet || g.json ? ProgressStyle::None : ProgressStyle::Auto);
  auto report = bundles::push_stored_images(store, refs, o, *progress).value_or_throw();
  std::vector<Pushed> out;
  for (const auto& i : report.images) out.push_back({i.source, i.pushed, i.digest});
  log_info("push: " + std::to_string(report.push.blobs_pushed) + " blobs pushed (" + human_bytes(report.push.bytes_pushed) + "), " +
           std::to_string(report.push.blobs_mounted) + " mounted, " + std::to_string(report.push.blobs_present) + " already there");
  return out;
}

CommandSpec store_command() {
  return {
      "store",
      "Inspect, verify, clean and push the content store (ls, fsck, gc, push)",
      "ls lists the stored images and charts (--json for a machine-readable list). fsck re-hashes every blob, checks "
      "that every index.json entry and every manifest reference resolves, prints each problem on its own line and "
      "exits 1 if there is any. fsck --repair also removes every blob whose bytes do not match its digest; the next "
      "mirror of a lock that needs it fetches it again. gc removes blobs no index.json entry reaches, temp files, "
      "partial downloads and what a killed build left in packages/, and reports the bytes freed. push REF... --to "
      "REGISTRY[/PREFIX] pushes stored images, each under the name a site registry with that prefix gives it (as "
      "import names them), skipping what the registry has and mounting across repositories; one line per image "
      "names where it went and its digest.",
      "gpubundle --store /srv/gpubundle store fsck",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);
        auto which = std::make_shared<std::string>();
        auto repair = std::make_shared<bool>(false);
        for (auto [name, help] : {std::pair{"ls", "List stored images and charts"},
                                  std::pair{"fsck", "Verify every blob and reference; exit 1 on any problem"},
                                  std::pair{"gc", "Remove unreferenced blobs, temp files, partial downloads and killed builds' scratch"}}) {
          auto* sub = app.add_subcommand(name, help);
          sub->footer("Example:\n  gpubundle --store /srv/gpubundle store " + std::string(name));
          sub->callback([which, n = std::string(name)] { *which = n; });
          if (std::string(name) == "fsck")
            sub->add_flag("--repair", *repair, "Remove corrupt blobs (the next mirror fetches them again)");
        }
        auto* push = app.add_subcommand("push", "Push stored images to a registry");
        push->footer("Example:\n  gpubundle --store /srv/gpubundle store push nvcr.io/nvidia/driver:580-6.1.0-57-amd64-ubuntu22.04 "
                     "--to registry.site.internal:5000/drivers");
        auto target = std::make_shared<PushTarget>();
        auto refs = std::make_shared<std::vector<std::string>>();
        push->add_option("ref", *refs, "Stored image references (see store ls)")->required();
        target->declare(*push, "--to", "Registry host[:port][/prefix]; http:// for plain HTTP")->required();
        push->callback([which] { *which = "push"; });
        return [&g, which, repair, target, refs]() -> int {
          if (*which == "push") {
            for (const auto& p : target->push(g, *refs))
              std::printf("%s\n", g.json ? nlohmann::json{{"source", p.source}, {"pushed", p.pushed}, {"digest", p.digest}}.dump().c_str()
                                         : (p.pushed + "@" + p.digest).c_str());
            return 0;
          }
          if (*which == "ls") return store_ls(g);
          if (*which == "fsck") return store_fsck(g, *repair);
          return store_gc(g);
        };
      },
  };
}

}  // namespace gb::cli
