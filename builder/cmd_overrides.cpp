#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "kit/kit.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "mirror/chart_fetch.hpp"

namespace gb::cli {

CommandSpec overrides_command() {
  return {
      "overrides",
      "Write the install kit (Helm values, install/verify scripts, node runtime config) for a site registry",
      "Reads a lock (or a recipe's default lock) and the chart it was resolved against (the store's copy, the lock's "
      "local chart source, or --chart; its sha256 must match the lock's) and writes, into -o DIR, everything a site needs to install "
      "the GPU Operator from its own registry: values.yaml pointing every image at HOST[:PORT][/PREFIX] (digest pins "
      "where the operator supports them), install.sh (helm upgrade --install, with --dry-run), verify.sh, mig.sh, "
      "time-slicing.yaml, alerts.yaml, containerd and CRI-O mirror config, and manifest.json. No registry is "
      "contacted. See docs/install-kit.md.",
      "gpubundle overrides site-a.lock.json --registry registry.site:5000/gpu --chart gpu-operator-v26.7.0.tgz -o kit/",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto lock_path = std::make_shared<std::string>();
        auto registry = std::make_shared<std::string>();
        auto out = std::make_shared<std::string>();
        auto chart_flag = std::make_shared<std::string>();
        auto layout = std::make_shared<std::string>("strip-host");
        auto repo_site = std::make_shared<PackageRepoSite>();
        app.add_option("lock", *lock_path, "Lock file (from gpubundle resolve or mirror), or a recipe: its lock <recipe folder>/<metadata.name>.lock.json")->required();
        auto serve = std::make_shared<std::string>();
        auto registry_ca = std::make_shared<std::string>();
        auto* reg = app.add_option("--registry", *registry, "Site registry: HOST[:PORT][/PREFIX], http://... for plain HTTP");
        app.add_option("--serve", *serve,
                       "No site registry: `gpubundle serve` serves the bundle at HOST[:PORT][/PREFIX] (http://... for plain HTTP); "
                       "the kit points there and carries serve's systemd unit (docs/serve.md)")
            ->excludes(reg);
        app.add_option("--registry-ca", *registry_ca, "CA certificate (PEM) of the registry's TLS certificate, for the nodes' runtime config");
        app.add_option("-o,--output", *out, "Kit folder to write (created when missing)")->required();
        app.add_option("--chart", *chart_flag, "Chart .tgz or folder (default: the store's copy, else the lock's chart source when it is local)");
        app.add_option("--layout", *layout, "strip-host (default): HOST/PREFIX/<path>; keep-host: HOST/PREFIX/<source host>/<path>");
        repo_site->declare(app);
        return [&g, lock_path, registry, serve, registry_ca, out, chart_flag, layout, repo_site]() -> int {
          if (registry->empty() == serve->empty()) throw Error(ErrorKind::Input, "overrides needs --registry or --serve (one of them)");
          auto [lock, lock_file] = recipes::lock_for(*lock_path).value_or_throw();
          kit::KitOptions options;
          options.serve = !serve->empty();
          options.registry = kit::SiteRegistry::parse(options.serve ? *serve : *registry).value_or_throw();
          if (!registry_ca->empty()) {
            options.registry_ca = read_file(*registry_ca, 1 << 20).value_or_throw();
            if (options.registry_ca.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
              throw Error(ErrorKind::Input, "--registry-ca " + *registry_ca + ": not a PEM certificate");
          }
          options.layout = kit::parse_layout(*layout).value_or_throw();
          options.package_repo_url = repo_site->url;
          options.package_repo_ca = repo_site->ca_pem();
          mirror::LoadedChart chart = mirror::lock_chart(lock, lock_file, *chart_flag, mirror::ChartAccess{g.store}).value_or_throw();
          std::optional<mirror::LoadedChart> network_chart;
          if (lock.network) {
            network_chart = mirror::lock_network_chart(lock, lock_file, mirror::ChartAccess{g.store}).value_or_throw();
            options.network_chart = &network_chart->chart;
          }
          kit::Kit k = kit::make_kit(lock, chart.chart, options).value_or_throw();
          kit::write_kit(k, *out).value_or_throw();
          // install.sh expects the chart archive next to it.
          write_atomic(fs::path(*out) / kit::kit_chart_file(lock), chart.archive).value_or_throw();
          if (network_chart)
            write_atomic(fs::path(*out) / recipes::chart_file_name(lock.network->chart.name, lock.network->chart.version), network_chart->archive)
                .value_or_throw();
          if (g.json) {
            nlohmann::json j;
            j["output"] = *out;
            j["registry"] = options.registry.str();
            j["chart"] = kit::kit_chart_file(lock);
            j["files"] = nlohmann::json::array();
            for (const auto& f : k.files) j["files"].push_back(f.path);
            std::string s = j.dump(2) + "\n";
            std::fwrite(s.data(), 1, s.size(), stdout);
          } else {
            log_info("wrote the install kit for " + options.registry.str() + " to " + *out + " (" +
                      std::to_string(k.files.size() + 1) + " files)");
          }
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
