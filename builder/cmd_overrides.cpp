#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "bundles/kit.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "recipes/chart.hpp"
#include "recipes/lock.hpp"
#include "recipes/resolver.hpp"

namespace gb::cli {

namespace {

// --chart, else the lock's chart source when it is a local path (relative to
// the lock file), else the copy `gpubundle mirror` keeps in the store.
fs::path find_chart(const std::string& given, const Lock& lock, const fs::path& lock_file, const fs::path& store) {
  if (!given.empty()) return given;
  const std::string& src = lock.chart.source;
  if (!src.empty() && !is_remote_chart(src)) {
    fs::path p = src;
    if (p.is_relative()) p = lock_file.parent_path() / p;
    if (fs::exists(p)) return p;
  }
  fs::path cached = store / "charts" / kit::kit_chart_file(lock);
  if (fs::exists(cached)) return cached;
  throw Error(input_error(lock_file.string() + ": chart " + lock.chart.name + " " + lock.chart.version +
                          " not found (looked at " + (src.empty() ? std::string("-") : src) + " and " + cached.string() +
                          "): pass --chart FILE"));
}

}  // namespace

CommandSpec overrides_command() {
  return {
      "overrides",
      "Write the install kit (Helm values, install/verify scripts, node runtime config) for a site registry",
      "Reads a lock and the chart it was resolved against and writes, into -o DIR, everything a site needs to install "
      "the GPU Operator from its own registry: values.yaml pointing every image at HOST[:PORT][/PREFIX] (digest pins "
      "where the operator supports them), install.sh (helm upgrade --install, with --dry-run), verify.sh, mig.sh, "
      "time-slicing.yaml, alerts.yaml, containerd and CRI-O mirror config, and manifest.json. No registry is "
      "contacted. See docs/install-kit.md.",
      "gpubundle overrides site-a.lock.json --registry registry.site:5000/gpu --chart gpu-operator-v24.9.2.tgz -o kit/",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto lock_path = std::make_shared<std::string>();
        auto registry = std::make_shared<std::string>();
        auto out = std::make_shared<std::string>();
        auto chart = std::make_shared<std::string>();
        auto layout = std::make_shared<std::string>("strip-host");
        app.add_option("lock", *lock_path, "Lock file (from gpubundle resolve or mirror)")->required();
        app.add_option("--registry", *registry, "Site registry: HOST[:PORT][/PREFIX], http://... for plain HTTP")->required();
        app.add_option("-o,--output", *out, "Kit folder to write (created when missing)")->required();
        app.add_option("--chart", *chart, "Chart .tgz or folder (default: the lock's chart source, else the store's copy)");
        app.add_option("--layout", *layout, "strip-host (default): HOST/PREFIX/<path>; keep-host: HOST/PREFIX/<source host>/<path>");
        return [&g, lock_path, registry, out, chart, layout]() -> int {
          Lock lock = load_lock(*lock_path).value_or_throw();
          kit::KitOptions options;
          options.registry = kit::SiteRegistry::parse(*registry).value_or_throw();
          options.layout = kit::parse_layout(*layout).value_or_throw();
          fs::path chart_path = find_chart(*chart, lock, *lock_path, g.store);
          Chart c = load_chart(chart_path).value_or_throw();
          kit::Kit k = kit::make_kit(lock, c, options).value_or_throw();
          kit::write_kit(k, *out).value_or_throw();

          // install.sh expects the chart archive next to it.
          fs::path chart_copy = fs::path(*out) / kit::kit_chart_file(lock);
          bool copied = false;
          if (fs::is_regular_file(chart_path)) {
            std::error_code ec;
            if (!fs::exists(chart_copy) || !fs::equivalent(chart_path, chart_copy, ec)) {
              std::string bytes = read_file(chart_path).value_or_throw();
              write_atomic(chart_copy, bytes).value_or_throw();
            }
            copied = true;
          } else {
            log::warn("chart " + chart_path.string() + " is a folder: put " + chart_copy.filename().string() + " into " +
                      *out + " or set GPUBUNDLE_CHART when running install.sh");
          }
          if (g.json) {
            nlohmann::json j;
            j["output"] = *out;
            j["registry"] = options.registry.str();
            j["chart"] = copied ? chart_copy.filename().string() : std::string();
            j["files"] = nlohmann::json::array();
            for (const auto& f : k.files) j["files"].push_back(f.path);
            std::string s = j.dump(2) + "\n";
            std::fwrite(s.data(), 1, s.size(), stdout);
          } else {
            log::info("wrote the install kit for " + options.registry.str() + " to " + *out + " (" +
                      std::to_string(k.files.size() + (copied ? 1 : 0)) + " files)");
          }
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
