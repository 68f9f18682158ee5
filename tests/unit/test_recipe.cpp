#include <catch2/catch.hpp>

#include "recipes/recipe.hpp"
#include "packages/names.hpp"

using namespace gb;
using namespace gb::recipes;

namespace {

const char* k_full = R"(apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site-a}
operator:
  version: v24.9.2
  chart: ./charts/gpu-operator-v24.9.2.tgz
target:
  gpus: [H100-SXM5-80GB, "10de:2335"]
  os: ubuntu22.04
  kernels: [5.15.0-1065-nvidia]
  platforms: [linux/amd64, linux/arm64]
driver:
  mode: precompiled
  version: "550.127.08"
  kernelModuleType: open
toolkit: {mode: container}
components:
  gds: {enabled: false}
  dcgmExporter: {enabled: true, serviceMonitor: true}
mig: {strategy: mixed, config: all-1g.10gb}
sharing: {timeSlicing: {replicas: 4}}
extraImages: [nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04]
destination: {registry: registry.site.internal:5000, prefix: gpu}
pullSecret: site-registry
)";

// Parses `text` and returns the error message ("" when it parsed).
std::string error_of(const std::string& text) {
  auto r = parse_recipe(text, "recipe.yaml");
  return r.ok() ? "" : r.error().message;
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = k_full;
  auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("the issue's example recipe parses completely", "[recipe]") {
  auto r = parse_recipe(k_full, "site.yaml").value_or_throw();
  CHECK(r.name == "site-a");
  CHECK(r.operator_version == "v24.9.2");
  CHECK(r.chart == "./charts/gpu-operator-v24.9.2.tgz");
  CHECK(r.gpus == std::vector<std::string>{"H100-SXM5-80GB", "10de:2335"});
  CHECK(r.os == "ubuntu22.04");
  CHECK(r.kernels == std::vector<std::string>{"5.15.0-1065-nvidia"});
  CHECK(r.platforms == std::vector<std::string>{"linux/amd64", "linux/arm64"});
  CHECK(r.workloads == std::vector<std::string>{"container"});
  CHECK(r.driver_mode == DriverMode::Precompiled);
  CHECK(r.driver_version == "550.127.08");
  CHECK(r.kernel_module_type == "open");
  CHECK(r.toolkit_mode == ToolkitMode::Container);
  CHECK(r.components.at("gds").enabled == false);
  CHECK(r.components.at("dcgmExporter").service_monitor == true);
  CHECK(r.mig_strategy == "mixed");
  CHECK(r.mig_config == "all-1g.10gb");
  CHECK(r.time_slicing_replicas == 4);
  CHECK(r.extra_images.size() == 1);
  CHECK(r.destination_registry == "registry.site.internal:5000");
  CHECK(r.destination_prefix == "gpu");
  CHECK(r.pull_secret == "site-registry");
  CHECK(r.where("driver.version") == "site.yaml:14: ");
  CHECK(r.where("target.gpus[1]") == "site.yaml:8: ");
}

TEST_CASE("defaults for a minimal recipe", "[recipe]") {
  auto r = parse_recipe("apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v26.7.0}\n"
                        "target: {gpus: [L4], os: rhel9.4}\n",
                        "/x/minimal.yaml")
               .value_or_throw();
  CHECK(r.name == "minimal");
  CHECK(r.chart == "https://helm.ngc.nvidia.com/nvidia");
  CHECK(r.driver_mode == DriverMode::Conventional);
  CHECK(r.kernel_module_type == "auto");
  CHECK(r.platforms == std::vector<std::string>{"linux/amd64"});
  CHECK(r.destination_registry.empty());
}

TEST_CASE("destination http:// marks a plain-HTTP site registry, as --registry does", "[recipe]") {
  auto http = parse_recipe(with("registry: registry.site.internal:5000", "registry: http://registry.site.internal:5000"), "r.yaml");
  REQUIRE(http.ok());
  CHECK(http->destination_registry == "registry.site.internal:5000");
  CHECK(http->destination_plain_http);
  auto https = parse_recipe(with("registry: registry.site.internal:5000", "registry: https://registry.site.internal:5000"), "r.yaml");
  REQUIRE(https.ok());
  CHECK(https->destination_registry == "registry.site.internal:5000");
  CHECK_FALSE(https->destination_plain_http);
  CHECK_FALSE(parse_recipe(k_full, "r.yaml").value_or_throw().destination_plain_http);
  CHECK(error_of(with("registry: registry.site.internal:5000", "registry: ftp://registry.site.internal:5000"))
            .find("is not a registry host") != std::string::npos);
}

TEST_CASE("unknown or mistyped fields name the path and the line", "[recipe]") {
  CHECK(error_of(with("  version: \"550.127.08\"", "  verison: \"550.127.08\"")) ==
        "recipe.yaml:14: driver.verison: unknown field (did you mean 'version'?); known fields: mode, version, branch, "
        "kernelModuleType");
  CHECK(error_of(with("pullSecret:", "pullSecrets:")).rfind("recipe.yaml:24: pullSecrets: unknown field (did you mean 'pullSecret'?)", 0) == 0);
  CHECK(error_of(with("toolkit: {mode: container}", "toolkit: {mode: container, extra: 1}"))
            .rfind("recipe.yaml:16: toolkit.extra: unknown field", 0) == 0);
  CHECK(error_of(with("  gds: {enabled: false}", "  gds: {enable: false}")).rfind("recipe.yaml:18: components.gds.enable: unknown field", 0) == 0);
}

TEST_CASE("every invalid value is refused with its field and line", "[recipe]") {
  struct Case {
    std::string from, to, expect;
  };
  std::vector<Case> cases = {
      {"apiVersion: gpubundle/v1", "apiVersion: gpubundle/v2", "recipe.yaml:1: apiVersion: unsupported version 'gpubundle/v2'"},
      {"kind: Recipe", "kind: Lock", "recipe.yaml:2: kind: must be Recipe"},
      {"metadata: {name: site-a}", "metadata: {name: Site_A}", "recipe.yaml:3: metadata.name: 'Site_A' must be lower-case"},
      {"  version: v24.9.2", "  version: 24.9", "recipe.yaml:5: operator.version: '24.9' is not a release tag"},
      {"  gpus: [H100-SXM5-80GB, \"10de:2335\"]", "  gpus: H100", "recipe.yaml:8: target.gpus: must be a list"},
      {"  gpus: [H100-SXM5-80GB, \"10de:2335\"]", "  gpus: []", "recipe.yaml:8: target.gpus: must name at least one GPU"},
      {"  os: ubuntu22.04", "  os: Ubuntu 22.04", "recipe.yaml:9: target.os: 'Ubuntu 22.04' is not an OS id"},
      {"  kernels: [5.15.0-1065-nvidia]", "  kernels: [generic]", "recipe.yaml:10: target.kernels[0]: 'generic' is not a kernel release"},
      {"  platforms: [linux/amd64, linux/arm64]", "  platforms: [linux/amd64, windows/amd64]",
       "recipe.yaml:11: target.platforms[1]: 'windows/amd64' is not supported"},
      {"  mode: precompiled", "  mode: compiled", "recipe.yaml:13: driver.mode: 'compiled' is not one of: conventional, precompiled, host"},
      {"  version: \"550.127.08\"", "  version: latest", "recipe.yaml:14: driver.version: 'latest' is not a driver version"},
      {"  version: \"550.127.08\"", "  version: \"550.127.08\"\n  branch: \"535\"", "recipe.yaml:15: driver.branch: branch 535 does not match driver.version 550.127.08"},
      {"  kernelModuleType: open", "  kernelModuleType: closed", "recipe.yaml:15: driver.kernelModuleType: 'closed' is not one of"},
      {"toolkit: {mode: container}", "toolkit: {mode: sidecar}", "recipe.yaml:16: toolkit.mode: 'sidecar' is not one of"},
      {"  gds: {enabled: false}", "  gds: {enabled: maybe}", "recipe.yaml:18: components.gds.enabled: must be true or false"},
      {"  gds: {enabled: false}", "  gds: {enabled: false, serviceMonitor: true}", "recipe.yaml:18: components.gds.serviceMonitor: only dcgmExporter"},
      {"mig: {strategy: mixed, config: all-1g.10gb}", "mig: {strategy: none}", "recipe.yaml:20: mig.strategy: 'none' is not one of: single, mixed"},
      {"sharing: {timeSlicing: {replicas: 4}}", "sharing: {timeSlicing: {replicas: 1}}", "recipe.yaml:21: sharing.timeSlicing.replicas: must be between 2 and 128"},
      {"sharing: {timeSlicing: {replicas: 4}}", "sharing: {timeSlicing: {replicas: four}}", "recipe.yaml:21: sharing.timeSlicing.replicas: must be a whole number"},
      {"extraImages: [nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04]", "extraImages: [\"nvcr.io/Nvidia/cuda:1\"]",
       "recipe.yaml:22: extraImages[0]: invalid image reference 'nvcr.io/Nvidia/cuda:1'"},
      {"destination: {registry: registry.site.internal:5000, prefix: gpu}", "destination: {registry: \"bad host!\", prefix: gpu}",
       "recipe.yaml:23: destination: 'bad host!/gpu' is not a registry host"},
      {"destination: {registry: registry.site.internal:5000, prefix: gpu}", "destination: {prefix: gpu}", "recipe.yaml:23: destination.registry: missing"},
      {"pullSecret: site-registry", "pullSecret: Site Registry", "recipe.yaml:24: pullSecret: 'Site Registry' is not a Kubernetes secret name"},
      {"target:\n", "target:\n  workloads: [vm]\n", "recipe.yaml:8: target.workloads[0]: 'vm' is not one of"},
  };
  for (const auto& c : cases) {
    INFO(c.to);
    std::string err = error_of(with(c.from, c.to));
    CHECK(err.rfind(c.expect, 0) == 0);
    CHECK(err.find('\n') == std::string::npos);
  }
}

TEST_CASE("structural errors: missing sections, YAML syntax, empty file", "[recipe]") {
  CHECK(error_of("") == "recipe.yaml: empty recipe");
  CHECK(error_of("kind: Recipe\n").rfind("recipe.yaml", 0) == 0);
  CHECK(error_of("apiVersion: gpubundle/v1\nkind: Recipe\ntarget: {gpus: [L4], os: ubuntu22.04}\n")
            .find("operator: missing") != std::string::npos);
  CHECK(error_of("apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v24.9.2}\n")
            .find("target: missing") != std::string::npos);
  CHECK(error_of("apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v24.9.2}\ntarget: {gpus: [L4]}\n")
            .find("target.os: missing") != std::string::npos);
  std::string syntax = error_of("apiVersion: gpubundle/v1\nkind: Recipe\ntarget: [unclosed\n");
  CHECK(syntax.rfind("recipe.yaml:", 0) == 0);
  CHECK(syntax.find("YAML syntax error") != std::string::npos);
  CHECK(error_of("- a\n- b\n").find("(top level): must be a mapping") != std::string::npos);
}

TEST_CASE("a missing recipe file is an input error naming it", "[recipe]") {
  auto r = load_recipe("/nonexistent/site.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message.find("/nonexistent/site.yaml") != std::string::npos);
}

TEST_CASE("packages: sources, kernel package names and architectures", "[recipe]") {
  const std::string base = std::string(k_full) + R"(packages:
  sources:
    - name: ubuntu
      type: apt
      url: http://archive.ubuntu.com/ubuntu/
      suites: [jammy, jammy-updates]
      components: [main]
      keyring: keys/ubuntu.gpg
    - {name: el9, type: rpm-md, url: "https://mirror.example/rocky/9", suites: [BaseOS/x86_64/os], keyring: /etc/k.asc, signatures: packages}
  kernelPackages: ["linux-headers-{kernel}"]
  server: {image: "registry.example/httpd:1"}
)";
  auto r = parse_recipe(base, "/sites/a/recipe.yaml").value_or_throw();
  REQUIRE(r.packages.sources.size() == 2);
  const auto& apt = r.packages.sources[0];
  CHECK(apt.format == PackageFormat::Apt);
  CHECK(apt.url == "http://archive.ubuntu.com/ubuntu");  // trailing slash dropped
  CHECK(apt.suites == std::vector<std::string>{"jammy", "jammy-updates"});
  CHECK(apt.keyring == "/sites/a/keys/ubuntu.gpg");  // relative to the recipe
  CHECK_FALSE(apt.package_signatures);
  CHECK(r.packages.sources[1].format == PackageFormat::RpmMd);
  CHECK(r.packages.sources[1].keyring == "/etc/k.asc");
  CHECK(r.packages.sources[1].package_signatures);
  CHECK(packages::kernel_package_names(r.packages, "ubuntu22.04", "6.8.0-49-generic") ==
        std::vector<std::string>{"linux-headers-6.8.0-49-generic"});

  CHECK(os_package_format("rocky9") == PackageFormat::RpmMd);
  CHECK(os_package_format("rhcos4.16") == PackageFormat::RpmMd);
  CHECK(os_package_format("ubuntu22.04") == PackageFormat::Apt);
  CHECK(os_package_format("debian12") == PackageFormat::Apt);
  CHECK(os_package_format("olympus1") == PackageFormat::Apt);  // "ol" only before a digit

  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    auto pos = s.find(from);
    REQUIRE(pos != std::string::npos);
    return error_of(s.replace(pos, from.size(), to));
  };
  CHECK_THAT(replace("type: apt", "type: yum"), Catch::Contains("packages.sources[0].type") && Catch::Contains("apt, rpm-md"));
  CHECK_THAT(replace("url: http://archive", "url: ftp://archive"), Catch::Contains("packages.sources[0].url"));
  CHECK_THAT(replace("url: http://archive", "url: http://me:secret@archive"), Catch::Contains("credentials"));
  CHECK(replace("url: http://archive.ubuntu.com/ubuntu/", "url: http://archive.ubuntu.com/~me@x/ubuntu") == "");
  CHECK_THAT(replace("      components: [main]\n", ""), Catch::Contains("packages.sources[0].components"));
  CHECK_THAT(replace("      keyring: keys/ubuntu.gpg\n", ""), Catch::Contains("packages.sources[0].keyring: missing"));
  CHECK_THAT(replace("suites: [BaseOS/x86_64/os]", "suites: [../etc]"), Catch::Contains("packages.sources[1].suites[0]"));
  CHECK_THAT(replace("name: el9", "name: ubuntu"), Catch::Contains("names two sources"));
  CHECK_THAT(replace("      keyring: keys/ubuntu.gpg\n", "      keyring: keys/ubuntu.gpg\n      signatures: packages\n"),
             Catch::Contains("packages.sources[0].signatures") && Catch::Contains("apt"));
  CHECK_THAT(replace("\"linux-headers-{kernel}\"", "linux-headers-generic"), Catch::Contains("packages.kernelPackages[0]"));
  CHECK_THAT(replace("server: {image:", "server: {img:"), Catch::Contains("packages.server.img"));
}

TEST_CASE("monitoring labels are Kubernetes labels", "[recipe][monitoring]") {
  std::string base = std::string(k_full);
  auto with = [&](const std::string& m) { return error_of(base + "monitoring: " + m + "\n"); };
  CHECK(with("{prometheusLabels: {release: prom}}").empty());
  CHECK(with("{prometheusLabels: {}, dashboardLabels: {grafana_dashboard: \"1\"}}").empty());
  CHECK(with("{prometheusLabels: {example.com/team: a-b.c_d}}").empty());
  CHECK(with("{prometheusLabels: {release: \"a b\"}}").find("monitoring.prometheusLabels.release") != std::string::npos);
  CHECK(with("{prometheusLabels: {\"-bad\": x}}").find("is not a label name") != std::string::npos);
  CHECK(with("{prometheusLabels: {\"Bad_Prefix/x\": y}}").find("DNS-subdomain prefix") != std::string::npos);
  CHECK(with("{prometheusLabels: {release: " + std::string(64, 'a') + "}}").find("is not a label value") != std::string::npos);
  CHECK(with("{prometheusLabel: {}}").find("did you mean 'prometheusLabels'") != std::string::npos);
  CHECK(with("{prometheusLabels: [release]}").find("must be a mapping") != std::string::npos);
}
