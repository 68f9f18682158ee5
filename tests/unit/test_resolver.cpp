#include <catch2/catch.hpp>
#include <regex>
#include <set>

#include "fixtures.hpp"
#include "recipes/resolver.hpp"

using namespace gb;
using namespace gb::recipes;
using gbtest::TempDir;

namespace {

const std::vector<std::string> k_tags = {"v23.9.2", "v24.3.0", "v24.6.2", "v24.9.2", "v25.10.1", "v26.7.0"};

std::string recipe_text(const std::string& tag, const std::string& body) {
  return "apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: t}\noperator: {version: " + tag + "}\n" + body;
}

struct Outcome {
  Result<Lock> lock;
  std::map<std::string, std::set<std::string>> by_component;  // component -> sources
};

// Packs the shared chart for `tag` (real version in Chart.yaml) and resolves.
Outcome resolve_shared(const std::string& tag, const std::string& body, bool real_version = true) {
  TempDir dir;
  auto tgz = gbtest::pack_chart(gbtest::shared_chart(tag, real_version), dir / ("gpu-operator-" + tag + ".tgz"));
  auto recipe = parse_recipe(recipe_text(tag, body), dir / "recipe.yaml");
  if (!recipe) return Outcome{Result<Lock>(recipe.error()), {}};  // refused at the recipe line
  auto chart = load_chart(tgz).value_or_throw();
  Outcome o{resolve(recipe.value(), chart, Catalog::builtin()), {}};
  if (o.lock.ok())
    for (const auto& img : o.lock->images)
      for (const auto& c : img.components) o.by_component[c].insert(img.source);
  return o;
}

std::string one(const Outcome& o, const std::string& component) {
  auto it = o.by_component.find(component);
  if (it == o.by_component.end()) return "";
  REQUIRE(it->second.size() == 1);
  return *it->second.begin();
}

std::string error_of(const std::string& tag, const std::string& body) {
  auto o = resolve_shared(tag, body);
  return o.lock.ok() ? "" : o.lock.error().message;
}

bool contains(const std::string& hay, const std::string& needle) {
  if (hay.find(needle) != std::string::npos) return true;
  UNSCOPED_INFO("message: " << hay);
  return false;
}

const char* k_h100_conventional = "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04}\n";

}  // namespace

TEST_CASE("every shipped chart resolves in all three driver modes", "[resolver]") {
  GB_REQUIRE_SHARED();
  for (const auto& tag : k_tags) {
    INFO(tag);
    auto values = gbtest::shared_chart(tag).at("values.yaml");
    std::smatch m;
    REQUIRE(std::regex_search(values, m, std::regex("\\ndriver:[\\s\\S]*?\\n  version: \"?([0-9.]+)\"?")));
    std::string chart_driver = m[1];
    std::string branch = chart_driver.substr(0, 3);

    auto conv = resolve_shared(tag, "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04}\ndriver: {kernelModuleType: open}\n");
    REQUIRE(conv.lock.ok());
    CHECK(one(conv, "driver") == "nvcr.io/nvidia/driver:" + chart_driver + "-ubuntu22.04");
    CHECK(one(conv, "operator") == "nvcr.io/nvidia/gpu-operator:" + tag);
    CHECK(conv.by_component.count("driver.manager") == 1);
    CHECK(conv.by_component.count("toolkit") == 1);
    CHECK(conv.by_component.count("devicePlugin") == 1);
    CHECK(conv.by_component.count("dcgmExporter") == 1);
    CHECK(conv.by_component.count("migManager") == 1);
    CHECK(conv.by_component.count("node-feature-discovery") == 1);
    // Off by default, or VM-only: not in a container-workload lock.
    for (const char* off : {"gds", "gdrcopy", "dcgm", "nodeStatusExporter", "sandboxDevicePlugin", "vfioManager",
                            "vgpuDeviceManager", "kataManager", "ccManager", "vgpuManager.driverManager", "draDriver"})
      CHECK(conv.by_component.count(off) == 0);

    auto pre = resolve_shared(tag, "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, kernels: [5.15.0-1065-nvidia, "
                                   "5.15.0-126-generic]}\ndriver: {mode: precompiled, kernelModuleType: open}\n");
    REQUIRE(pre.lock.ok());
    CHECK(pre.by_component.at("driver") ==
          std::set<std::string>{"nvcr.io/nvidia/driver:" + branch + "-5.15.0-1065-nvidia-ubuntu22.04",
                                "nvcr.io/nvidia/driver:" + branch + "-5.15.0-126-generic-ubuntu22.04"});
    CHECK(pre.lock->driver.use_precompiled);
    CHECK(pre.lock->driver.branch == branch);

    auto host = resolve_shared(tag, "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04}\ndriver: {mode: host, version: \"" +
                                        chart_driver + "\", kernelModuleType: open}\ntoolkit: {mode: host}\n");
    REQUIRE(host.lock.ok());
    CHECK(host.by_component.count("driver") == 0);
    CHECK(host.by_component.count("driver.manager") == 0);
    CHECK(host.by_component.count("toolkit") == 0);
    CHECK(host.by_component.count("devicePlugin") == 1);
  }
}

TEST_CASE("known per-release facts", "[resolver]") {
  GB_REQUIRE_SHARED();
  auto v25 = resolve_shared("v25.10.1", k_h100_conventional);
  REQUIRE(v25.lock.ok());
  CHECK(one(v25, "validator") == "nvcr.io/nvidia/gpu-operator:v25.10.1");
  CHECK(one(v25, "operator") == one(v25, "validator"));
  CHECK(one(v25, "toolkit") == "nvcr.io/nvidia/k8s/container-toolkit:v1.18.1");
  CHECK(one(v25, "node-feature-discovery") == "registry.k8s.io/nfd/node-feature-discovery:v0.18.2");

  auto v23 = resolve_shared("v23.9.2", k_h100_conventional);
  REQUIRE(v23.lock.ok());
  CHECK(one(v23, "gfd") == "nvcr.io/nvidia/gpu-feature-discovery:v0.8.2-ubi8");
  CHECK(one(v23, "validator") == "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v23.9.2");
  CHECK(one(v23, "node-feature-discovery") == "registry.k8s.io/nfd/node-feature-discovery:v0.14.2");

  for (const char* tag : {"v24.3.0", "v24.6.2", "v24.9.2", "v25.10.1", "v26.7.0"}) {
    INFO(tag);
    auto o = resolve_shared(tag, k_h100_conventional);
    REQUIRE(o.lock.ok());
    CHECK(one(o, "gfd") == one(o, "devicePlugin"));
    CHECK(one(o, "gfd").rfind("nvcr.io/nvidia/k8s-device-plugin:", 0) == 0);
  }
  // The CUDA init container: the dcgm-exporter's, on OpenShift only.
  auto v24 = resolve_shared("v24.9.2", "target: {gpus: [H100-SXM5-80GB], os: rhcos4.16}\n");
  REQUIRE(v24.lock.ok());
  CHECK(one(v24, "operator.initContainer") == "nvcr.io/nvidia/cuda:12.6.3-base-ubi9");
  auto v26 = resolve_shared("v26.7.0", k_h100_conventional);
  CHECK(v26.by_component.count("operator.initContainer") == 0);
}

TEST_CASE("driver OS tags follow each release's rule", "[resolver][ostag]") {
  GB_REQUIRE_SHARED();
  auto rhel = [](const std::string& tag, const std::string& os) {
    auto o = resolve_shared(tag, "target: {gpus: [L4], os: " + os + "}\ndriver: {version: \"580.105.08\"}\n"
                                 "components: {gds: true, gdrcopy: true}\n");
    REQUIRE(o.lock.ok());
    return std::vector<std::string>{one(o, "driver"), one(o, "gds"), one(o, "gdrcopy")};
  };
  auto v26 = rhel("v26.7.0", "rhel9.4");
  CHECK(v26[0] == "nvcr.io/nvidia/driver:580.105.08-rhel9");
  CHECK(v26[1] == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-rhel9");
  CHECK(v26[2] == "nvcr.io/nvidia/cloud-native/gdrdrv:v2.6-rhel9");
  auto v25 = rhel("v25.10.1", "rhel9.4");
  CHECK(v25[0] == "nvcr.io/nvidia/driver:580.105.08-rhel9.4");
  CHECK(v25[2] == "nvcr.io/nvidia/cloud-native/gdrdrv:v2.5.1-rhel9.4");
  CHECK(rhel("v26.7.0", "rhcos4.18")[0] == "nvcr.io/nvidia/driver:580.105.08-rhcos4.18");
  CHECK(rhel("v26.7.0", "ubuntu24.04")[0] == "nvcr.io/nvidia/driver:580.105.08-ubuntu24.04");

  const auto& cat = Catalog::builtin();
  CHECK(cat.os_tag("v26.3.3", "rocky9.7") == "rocky9");
  CHECK(cat.os_tag("v26.3.3", "rhel9.6") == "rhel9.6");
  CHECK(cat.os_tag("v26.3.3", "rhel10.1") == "rhel10");
  CHECK(cat.os_tag("v26.7.0", "ol9.4") == "ol9");
  CHECK(cat.os_tag("v25.10.1", "rocky9.7") == "rocky9.7");
  CHECK(cat.os_tag("v27.1.0", "rhel10.2") == "rhel10");
}

TEST_CASE("major-only OS names only where the release drops the minor", "[resolver][ostag]") {
  GB_REQUIRE_SHARED();
  auto os_error = [](const std::string& tag, const std::string& os) {
    return error_of(tag, "target: {gpus: [L4], os: " + os + "}\ndriver: {version: \"580.105.08\"}\n");
  };
  // v25.10.1 composes -rhel9.N from VERSION_ID: rhel9 would mirror a tag no node asks for.
  CHECK(os_error("v25.10.1", "rhel9") ==
        "recipe.yaml:5: target.os rhel9: GPU Operator v25.10.1 tags driver images with the node's full VERSION_ID "
        "(rhel9.N), so 'rhel9' names a tag no node asks for; write the version in the node's /etc/os-release, e.g. "
        "rhel9.2, rhel9.4, rhel9.5, rhel9.6, rhel9.7, rhel9.8");
  // Every family whose VERSION_ID has a minor, on every shipped release before the rule.
  for (const auto& tag : k_tags)
    for (const char* os : {"ubuntu22", "rhcos4", "sles15", "sl-micro6"}) {
      INFO(tag << " " << os);
      CHECK(os_error(tag, os).find("target.os " + std::string(os) + ": GPU Operator " + tag) != std::string::npos);
    }
  for (const char* os : {"rhel9", "rocky9", "ol9"}) {
    CHECK_FALSE(os_error("v25.10.1", os).empty());
    auto o = resolve_shared("v26.7.0", "target: {gpus: [L4], os: " + std::string(os) + "}\ndriver: {version: \"580.105.08\"}\n");
    REQUIRE(o.lock.ok());
    CHECK(one(o, "driver") == "nvcr.io/nvidia/driver:580.105.08-" + std::string(os));
  }
  // Names with a hyphenated ID resolve verbatim.
  auto micro = resolve_shared("v26.7.0", "target: {gpus: [L4], os: sl-micro6.1}\ndriver: {version: \"580.105.08\"}\n");
  REQUIRE(micro.lock.ok());
  CHECK(one(micro, "driver") == "nvcr.io/nvidia/driver:580.105.08-sl-micro6.1");
  // v26.3 drops the minor for rocky and for rhel from 10 only.
  const auto& cat = Catalog::builtin();
  CHECK(cat.os_name_problem("v26.3.3", "rocky9").empty());
  CHECK(cat.os_name_problem("v26.3.3", "rhel10").empty());
  CHECK(cat.os_name_problem("v26.3.3", "rhel9").find("e.g. rhel9.2") != std::string::npos);
  CHECK(cat.os_name_problem("v26.3.3", "ol9").find("(ol9.N)") != std::string::npos);
  CHECK(cat.os_name_problem("v26.3.3", "debian12").empty());  // VERSION_ID has no minor
}

TEST_CASE("the Chart.yaml version trap", "[resolver]") {
  GB_REQUIRE_SHARED();
  // Packed from the git tag: version v1.0.0-devel, appVersion devel-ubi8.
  auto o = resolve_shared("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04}\ncomponents: {nodeStatusExporter: true}\n", false);
  REQUIRE(o.lock.ok());
  CHECK(one(o, "operator") == "nvcr.io/nvidia/gpu-operator:v24.9.2");
  CHECK(one(o, "validator") == "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2");
  CHECK(one(o, "nodeStatusExporter") == one(o, "validator"));
  CHECK(o.lock->chart.version == "v24.9.2");
  CHECK(o.lock->chart.app_version == "devel-ubi8");
  bool warned = false;
  for (const auto& w : o.lock->warnings) warned = warned || w.find("placeholder version v1.0.0-devel") != std::string::npos;
  CHECK(warned);
  // A real chart of another release is refused, naming both versions.
  TempDir dir;
  auto tgz = gbtest::pack_chart(gbtest::shared_chart("v24.6.2"), dir / "c.tgz");
  auto recipe = parse_recipe(recipe_text("v24.9.2", k_h100_conventional), dir / "r.yaml").value_or_throw();
  auto r = resolve(recipe, load_chart(tgz).value_or_throw(), Catalog::builtin());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("operator.version v24.9.2 does not match the chart's version v24.6.2") != std::string::npos);
}

TEST_CASE("a chart the catalog has never seen resolves to exactly its values", "[resolver]") {
  GB_REQUIRE_SHARED();
  auto files = gbtest::shared_chart("v24.9.2");
  std::string& values = files.at("values.yaml");
  values = std::regex_replace(values, std::regex("v1.17.4-ubuntu20.04"), "v9.1.0");
  values = std::regex_replace(values, std::regex("version: v0.17.0"), "version: v9.2.0");
  values += "\nfooExporter:\n  enabled: true\n  repository: nvcr.io/nvidia/future\n  image: foo-exporter\n"
            "  version: v1.2.3\n  sidecar:\n    repository: quay.io/acme\n    image: foo-sidecar\n    version: \"0.1\"\n"
            "barManager:\n  enabled: false\n  repository: nvcr.io/nvidia\n  image: bar\n  version: v1\n";
  files["Chart.yaml"] = std::regex_replace(files["Chart.yaml"], std::regex("version: v24.9.2"), "version: v27.1.0");
  files["Chart.yaml"] = std::regex_replace(files["Chart.yaml"], std::regex("appVersion: \"v24.9.2\""), "appVersion: \"v27.1.0\"");
  TempDir dir;
  auto tgz = gbtest::pack_chart(files, dir / "future.tgz");
  auto recipe = parse_recipe(recipe_text("v27.1.0", "target: {gpus: [L4], os: ubuntu24.04}\ndriver: {version: \"595.91.07\"}\n"),
                             dir / "r.yaml")
                    .value_or_throw();
  auto lock = resolve(recipe, load_chart(tgz).value_or_throw(), Catalog::builtin()).value_or_throw();
  std::set<std::string> got;
  for (const auto& i : lock.images) got.insert(i.source);
  std::set<std::string> expected = {
      "nvcr.io/nvidia/gpu-operator:v27.1.0",
      "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v27.1.0",
      "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04",
      "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.7.0",
      "nvcr.io/nvidia/k8s/container-toolkit:v9.1.0",
      "nvcr.io/nvidia/k8s-device-plugin:v9.2.0",
      "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04",
      // operator.initContainer (cuda) is OpenShift-only; the MIG manager runs
      // only with a MIG-capable GPU, and L4 is none.
      "registry.k8s.io/nfd/node-feature-discovery:v0.16.6",
      "nvcr.io/nvidia/future/foo-exporter:v1.2.3",
      "quay.io/acme/foo-sidecar:0.1",
  };
  CHECK(got == expected);
  bool warned = false;
  for (const auto& w : lock.warnings) warned = warned || w.find("no OS support data for GPU Operator v27.1.0") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("compatibility checks refuse with both sides named", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  CHECK(error_of("v25.10.1", "target: {gpus: [B200], os: ubuntu22.04}\ndriver: {version: \"550.127.08\", kernelModuleType: open}\n") ==
        "recipe.yaml:6: driver.version 550.127.08 does not support B200 (needs >= 570.133.20, open modules)");
  CHECK(error_of("v26.7.0", "target: {gpus: [B200], os: ubuntu22.04}\ndriver: {version: \"570.124.06\", kernelModuleType: open}\n")
            .find("driver.version 570.124.06 does not support B200") != std::string::npos);
  CHECK(error_of("v26.7.0", "target: {gpus: [B200], os: ubuntu22.04}\ndriver: {version: \"580.105.08\", kernelModuleType: proprietary}\n") ==
        "recipe.yaml:6: B200 (blackwell) needs open kernel modules, but driver.kernelModuleType is proprietary; set "
        "driver.kernelModuleType: open");
  CHECK(error_of("v24.9.2", "target: {gpus: [GH200], os: ubuntu22.04}\ndriver: {version: \"550.127.08\"}\n")
            .find("GH200-480GB (grace-hopper) needs open kernel modules, but driver.kernelModuleType auto installs "
                  "proprietary modules with branch 550") != std::string::npos);
  CHECK(error_of("v24.9.2", "target: {gpus: [\"10de:2335\"], os: ubuntu22.04}\ndriver: {branch: \"535\"}\n") ==
        "recipe.yaml:6: driver.branch 535 does not support H200-SXM-141GB (needs >= 550)");
  // The chart's default driver is checked too, and the message says so.
  CHECK(error_of("v24.9.2", "target: {gpus: [B300], os: ubuntu22.04}\n")
            .find("driver (chart default 550.144.03) does not support B300 (needs >= 580, open modules)") != std::string::npos);
  // Precompiled limits.
  const std::string pre = "driver: {mode: precompiled, kernelModuleType: open}\n";
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-1]}\n" + pre + "components: {gds: true}\n")
            .find("precompiled drivers do not support GPUDirect Storage") != std::string::npos);
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-1], workloads: [vm-vgpu]}\n" + pre)
            .find("precompiled drivers do not support vGPU; remove vm-vgpu") != std::string::npos);
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04}\n" + pre)
            .find("target.kernels: precompiled drivers need the kernel release") != std::string::npos);
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-1]}\ndriver: {mode: precompiled, version: \"sha256:" +
                                std::string(64, 'a') + "\"}\n")
            .find("a digest-pinned driver cannot be used with precompiled drivers") != std::string::npos);
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {kernelModuleType: proprietary}\ncomponents: {gds: true}\n")
            .find("components.gds is on, but driver.kernelModuleType is proprietary: GPUDirect Storage (nvidia-fs) needs "
                  "open kernel modules") != std::string::npos);
  CHECK(error_of("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {version: \"570.195.03\"}\ncomponents: {draDriver: true}\n")
            .find("the DRA driver needs driver branch >= 580") != std::string::npos);
  // GPU and component names.
  CHECK(error_of("v24.9.2", "target: {gpus: [L4, H300], os: ubuntu22.04}\n").find("recipe.yaml:5: target.gpus: unknown GPU 'H300'") == 0);
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04}\ncomponents: {gdss: false}\n")
            .find("recipe.yaml:6: components.gdss: chart gpu-operator v24.9.2 has no such component") == 0);
  // MIG layouts.
  CHECK(error_of("v24.9.2", "target: {gpus: [L40S], os: ubuntu22.04}\nmig: {config: all-1g.10gb}\n")
            .find("mig.config all-1g.10gb: L40S does not support MIG") != std::string::npos);
  CHECK(error_of("v24.9.2", "target: {gpus: [H100-SXM5-80GB, H200], os: ubuntu22.04}\nmig: {strategy: mixed, config: all-balanced}\n").empty());
  // Several problems: one line each.
  auto many = error_of("v25.10.1", "target: {gpus: [B200, GB200], os: ubuntu22.04}\ndriver: {version: \"550.127.08\"}\n");
  CHECK(std::count(many.begin(), many.end(), '\n') == 3);
}

TEST_CASE("the operator's run-time refusals are resolve-time refusals", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  const std::string pre = "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-1065-nvidia]}\n"
                          "driver: {mode: precompiled, kernelModuleType: open}\n";
  // "GDRCopy is not supported along with pre-compiled NVIDIA drivers" (object_controls.go, since v24.3.0).
  for (const char* tag : {"v24.3.0", "v24.9.2", "v25.10.1", "v26.7.0"}) {
    INFO(tag);
    CHECK(error_of(tag, pre + "components: {gdrcopy: true}\n") ==
          "recipe.yaml:7: components.gdrcopy is on, but driver.mode is precompiled: GPU Operator " + std::string(tag) +
              " refuses GDRCopy with precompiled drivers; disable components.gdrcopy or use driver.mode: conventional");
    CHECK(error_of(tag, pre + "components: {gdrcopy: false}\n").empty());
  }
  // v23.9.2 has no GDRCopy at all: the component is unknown, not a conflict.
  CHECK(error_of("v23.9.2", pre + "components: {gdrcopy: true}\n").find("has no such component") != std::string::npos);
  // nvidia-fs and gdrdrv are sidecars of the driver DaemonSet: host mode never starts them.
  CHECK(error_of("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {mode: host}\ncomponents: {gds: true, gdrcopy: true}\n") ==
        "recipe.yaml:7: components.gds is on, but driver.mode is host: the operator runs GPUDirect Storage (nvidia-fs) inside "
        "the driver DaemonSet, which host mode switches off, so it would never start; install it on the host and set "
        "components.gds: false, or use driver.mode: conventional\n"
        "recipe.yaml:7: components.gdrcopy is on, but driver.mode is host: the operator runs GDRCopy (gdrdrv) inside the "
        "driver DaemonSet, which host mode switches off, so it would never start; install it on the host and set "
        "components.gdrcopy: false, or use driver.mode: conventional");
  // "GPUDirect Storage driver ... is only supported with NVIDIA OpenRM drivers" (ClusterPolicy up to v24.9, NVIDIADriver since).
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04}\ncomponents: {gds: true}\n") ==
        "recipe.yaml:6: components.gds is on, but driver.kernelModuleType auto installs proprietary modules with branch 550: "
        "GPUDirect Storage (nvidia-fs) needs open kernel modules; set driver.kernelModuleType: open or disable components.gds");
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {kernelModuleType: open}\ncomponents: {gds: true}\n").empty());
  // Precompiled drivers and vGPU.
  CHECK(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-1], workloads: [vm-vgpu]}\n"
                            "driver: {mode: precompiled, kernelModuleType: open}\n") ==
        "recipe.yaml:5: target.workloads has vm-vgpu, but driver.mode is precompiled: precompiled drivers do not support "
        "vGPU; remove vm-vgpu or use driver.mode: conventional");
}

namespace {
// Resolves against the shared chart of `tag` with one values.yaml line replaced.
Result<Lock> resolve_edited(const std::string& tag, const std::string& from, const std::string& to, const std::string& body) {
  TempDir dir;
  auto files = gbtest::shared_chart(tag);
  auto& values = files.at("values.yaml");
  auto at = values.find(from);
  REQUIRE(at != std::string::npos);
  values.replace(at, from.size(), to);
  auto tgz = gbtest::pack_chart(files, dir / ("gpu-operator-" + tag + ".tgz"));
  auto recipe = parse_recipe(recipe_text(tag, body), dir / "recipe.yaml").value_or_throw();
  return resolve(recipe, load_chart(tgz).value_or_throw(), Catalog::builtin());
}
}  // namespace

TEST_CASE("the NRI plugin needs the operator's toolkit", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  // validateClusterPolicySpec: "the NRI Plugin cannot be enabled when the Container Toolkit is disabled".
  const std::string host = "target: {gpus: [L4], os: ubuntu22.04}\ntoolkit: {mode: host}\n";
  auto nri = resolve_edited("v26.7.0", "nriPluginEnabled: false", "nriPluginEnabled: true", host);
  REQUIRE_FALSE(nri.ok());
  CHECK(nri.error().message ==
        "recipe.yaml:6: toolkit.mode is host, but chart gpu-operator v26.7.0 sets cdi.nriPluginEnabled: GPU Operator v26.7.0 "
        "refuses the NRI plugin without its container toolkit; use toolkit.mode: container or a chart with "
        "cdi.nriPluginEnabled: false");
  CHECK(resolve_edited("v26.7.0", "nriPluginEnabled: false", "nriPluginEnabled: true",
                       "target: {gpus: [L4], os: ubuntu22.04}\n").ok());
  CHECK(error_of("v26.7.0", host).empty());  // the shipped default is off
}

TEST_CASE("VM workloads switch off the operator's driver auto-upgrade: a warning", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  const std::string warning =
      "target.workloads lists a VM workload, so the kit sets sandboxWorkloads.enabled, and GPU Operator v26.7.0 then skips "
      "driver.upgradePolicy.autoUpgrade: a new driver version is not rolled out node by node; drain and restart the driver "
      "pods yourself when you change driver.version";
  auto vm = resolve_shared("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04, workloads: [container, vm-passthrough]}\n");
  REQUIRE(vm.lock.ok());
  CHECK(std::count(vm.lock->warnings.begin(), vm.lock->warnings.end(), warning) == 1);
  auto off = resolve_edited("v26.7.0", "autoUpgrade: true", "autoUpgrade: false",
                            "target: {gpus: [L4], os: ubuntu22.04, workloads: [container, vm-passthrough]}\n");
  REQUIRE(off.ok());
  CHECK(std::count(off->warnings.begin(), off->warnings.end(), warning) == 0);
  auto containers = resolve_shared("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04}\n");
  REQUIRE(containers.lock.ok());
  CHECK(std::count(containers.lock->warnings.begin(), containers.lock->warnings.end(), warning) == 0);
}

TEST_CASE("MIG layouts are checked against the release's own mig-parted config", "[resolver][mig]") {
  GB_REQUIRE_SHARED();
  auto mig = [](const std::string& tag, const std::string& gpus, const std::string& section) {
    return error_of(tag, "target: {gpus: [" + gpus + "], os: ubuntu22.04}\ndriver: {kernelModuleType: open}\nmig: " + section + "\n");
  };
  // Real config names, media-extension ones included.
  for (const auto& tag : k_tags) {
    INFO(tag);
    CHECK(mig(tag, "H100-SXM5-80GB", "{config: all-1g.10gb}").empty());
    CHECK(mig(tag, "A100-SXM4-40GB", "{config: all-1g.5gb.me}").empty());
  }
  CHECK(mig("v24.9.2", "H100-SXM5-80GB", "{config: all-1g.10gb.me}").empty());
  // A name the release does not have, listing the ones it has for that GPU.
  auto unknown = mig("v24.9.2", "H100-SXM5-80GB, H200", "{config: all-1g.10gb}");
  CHECK(unknown.find("recipe.yaml:7: mig.config all-1g.10gb: GPU Operator v24.9.2's MIG manager has no layout all-1g.10gb "
                     "for H200-SXM-141GB (10de:2335); its layouts for H200-SXM-141GB: all-1g.18gb, ") == 0);
  CHECK(unknown.find("all-7g.141gb") != std::string::npos);
  CHECK(unknown.find("all-7g.80gb") == std::string::npos);
  // H200 layouts arrived with v24.6: v24.3.0's config has none.
  CHECK(mig("v24.3.0", "H200", "{config: all-1g.18gb}").find("its layouts for H200-SXM-141GB: all-disabled, all-enabled") !=
        std::string::npos);
  CHECK(mig("v24.6.2", "H200", "{config: all-1g.18gb}").empty());
  // Not a label value: never passes, whatever the GPU.
  CHECK(mig("v26.7.0", "H100-SXM5-80GB", "{config: \"all-1g.10gb+me\"}") ==
        "recipe.yaml:7: mig.config 'all-1g.10gb+me' is not a Kubernetes label value (the MIG manager reads it from the node "
        "label nvidia.com/mig.config): use letters, digits, '-', '_' or '.', e.g. all-1g.10gb.me for 1g.10gb+me");
  // The single strategy (also the chart's default) with a layout that mixes profiles.
  CHECK(mig("v25.10.1", "H100-SXM5-80GB", "{strategy: single, config: all-balanced}") ==
        "recipe.yaml:7: mig.strategy single with mig.config all-balanced, which gives H100-SXM5-80GB the profiles 1g.10gb, "
        "2g.20gb, 3g.40gb: the single strategy needs one profile per node; set mig.strategy: mixed or choose a one-profile layout");
  CHECK(mig("v25.10.1", "H100-SXM5-80GB", "{config: all-balanced}").find("mig.strategy single (the chart's default) with") !=
        std::string::npos);
  CHECK(mig("v25.10.1", "H100-SXM5-80GB", "{strategy: mixed, config: all-balanced}").empty());
  CHECK(mig("v25.10.1", "H100-SXM5-80GB", "{strategy: single, config: all-3g.40gb}").empty());
}

TEST_CASE("data-center GPUs of the releases are in the catalog", "[resolver][catalog]") {
  GB_REQUIRE_SHARED();
  // Every GPU the shipped MIG configs name by device id, and the data-center GPUs without MIG.
  for (const char* gpu : {"A30", "A10", "A10G", "A40", "A16", "A2", "L4", "L40", "L40S", "T4", "10de:20b1", "0x20B710DE",
                          "A800-80GB", "H800", "H800-NVL", "H100-96GB", "H20", "PG506-96GB", "H100-NVL",
                          "V100-SXM2-32GB", "V100S"}) {
    INFO(gpu);
    CHECK(error_of("v24.9.2", "target: {gpus: [\"" + std::string(gpu) + "\"], os: ubuntu22.04}\ndriver: {kernelModuleType: proprietary}\n") == "");
  }
  CHECK(Catalog::builtin().find_gpu("10de:20b1") == Catalog::builtin().find_gpu("A100-PCIE-40GB"));
  // The platform-support page's other GPUs, by name and by PCI id: workstation
  // Ampere and Turing, A100X/A30X, L20, Pascal (proprietary modules, branch
  // 580 at most), and the Blackwell ones from the release that names them.
  for (const char* gpu : {"RTX-A6000", "10de:2230", "RTX-A4000", "10de:24b1", "A100X", "A30X", "L20", "10de:26ba",
                          "Quadro-RTX-8000", "10de:1e78", "T400", "T600", "T1000", "P100", "P40", "P4", "10de:15f9"}) {
    INFO(gpu);
    CHECK(error_of("v24.9.2", "target: {gpus: [\"" + std::string(gpu) + "\"], os: ubuntu22.04}\ndriver: {kernelModuleType: proprietary}\n") == "");
  }
  CHECK(error_of("v24.9.2", "target: {gpus: [P40], os: ubuntu22.04}\ndriver: {kernelModuleType: open}\n").find("P40") != std::string::npos);
  for (const char* gpu : {"GB10", "10de:2e12", "RTX-6000D", "10de:2c3a", "DGX-Station"}) {
    INFO(gpu);
    CHECK(error_of("v26.7.0", "target: {gpus: [\"" + std::string(gpu) + "\"], os: ubuntu24.04}\n") == "");
    CHECK(error_of("v24.9.2", "target: {gpus: [\"" + std::string(gpu) + "\"], os: ubuntu22.04}\n").find("GPU Operator") != std::string::npos);
  }
  // An id the catalog lacks is named from Debian's pci.ids.
  if (pci_ids_name("10de:1cb1").empty()) {
    WARN("skipped: /usr/share/misc/pci.ids is absent (Debian package pci.ids)");
  } else {
    CHECK(error_of("v24.9.2", "target: {gpus: [\"10de:1cb1\"], os: ubuntu22.04}\n") ==
          "recipe.yaml:5: target.gpus: 10de:1cb1 is GP107GL [Quadro P1000] (pci.ids), which the catalog has no driver, MIG or "
          "module facts for; add it to recipes/catalog/gpus.yaml or name a catalog GPU");
    CHECK(pci_ids_name("0x223010DE") == "GA102GL [RTX A6000]");
  }
  CHECK(pci_ids_name("10de:ffff").empty());
}

TEST_CASE("GPU and driver branch against the operator release", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  CHECK(error_of("v23.9.2", "target: {gpus: [B200], os: ubuntu22.04}\ndriver: {version: \"570.133.20\", kernelModuleType: open}\n")
            .find("recipe.yaml:5: target.gpus: B200 is supported from GPU Operator v25.3.0 on, but operator.version is v23.9.2; use "
                  "v25.3.0 or later\n") == 0);
  CHECK(error_of("v24.9.2", "target: {gpus: [L4, B300], os: ubuntu22.04}\ndriver: {version: \"580.105.08\", kernelModuleType: open}\n")
            .find("recipe.yaml:5: target.gpus: B300 is supported from GPU Operator v25.10.0 on, but operator.version is v24.9.2") == 0);
  CHECK(error_of("v25.10.1", "target: {gpus: [B300], os: ubuntu22.04}\ndriver: {version: \"580.105.08\"}\n").empty());
  // Volta: R580 is the last branch, proprietary modules only.
  CHECK(error_of("v26.7.0", "target: {gpus: [V100-SXM2-16GB], os: ubuntu22.04}\ndriver: {version: \"595.91.07\", kernelModuleType: proprietary}\n") ==
        "recipe.yaml:6: driver.version 595.91.07 does not support V100-SXM2-16GB (volta): branch 580 is the last that "
        "does; pin driver.branch: \"580\" or older");
  // auto with 580: its installer recommends proprietary for a V100.
  auto v100 = resolve_shared("v26.7.0", "target: {gpus: [V100-SXM2-16GB], os: ubuntu22.04}\ndriver: {version: \"580.105.08\"}\n");
  REQUIRE(v100.lock.ok());
  CHECK(v100.lock->driver.kernel_module_type == "proprietary");
  // HGX B200's >= 570.133.20 is for driver containers; a host driver is held to the branch.
  const std::string b200 = "target: {gpus: [B200], os: ubuntu22.04}\ndriver: {mode: MODE, version: \"570.124.06\", kernelModuleType: open}\n";
  auto with_mode = [&](const std::string& mode) { return std::regex_replace(b200, std::regex("MODE"), mode); };
  CHECK(error_of("v25.10.1", with_mode("conventional")).find("does not support B200 (needs >= 570.133.20") != std::string::npos);
  CHECK(error_of("v25.10.1", with_mode("host")).empty());
  CHECK(error_of("v25.10.1", std::regex_replace(with_mode("host"), std::regex("570.124.06"), "565.57.01"))
            .find("driver.version 565.57.01 does not support B200 (needs >= 570, open modules)") != std::string::npos);
}

namespace {
bool has_warning(const Lock& lock, const std::string& text) {
  return std::any_of(lock.warnings.begin(), lock.warnings.end(), [&](const std::string& w) { return w == text; });
}
}  // namespace

TEST_CASE("kernelModuleType auto: the driver container's rule", "[catalog][kmt]") {
  const auto& cat = Catalog::builtin();
  const GpuInfo* v100 = cat.find_gpu("V100-SXM2-16GB");
  const GpuInfo* h100 = cat.find_gpu("H100-SXM5-80GB");
  const GpuInfo* gh200 = cat.find_gpu("GH200");
  REQUIRE((v100 && h100 && gh200));
  auto is = [](const AutoModuleType& a, const std::string& type, bool recommended) {
    UNSCOPED_INFO(a.installer << ": " << a.type);
    return a.type == type && a.recommended == recommended;
  };
  // From 570.86.16 the installer answers from the GPUs present.
  CHECK(is(cat.auto_module_type({v100, h100}, "580.105.08", ""), "proprietary", true));
  CHECK(is(cat.auto_module_type({h100}, "570.86.16", ""), "open", true));
  CHECK(is(cat.auto_module_type({v100}, "580.105.08", ""), "proprietary", true));
  CHECK(is(cat.auto_module_type({gh200, h100}, "580.105.08", ""), "open", true));
  // 590 lists Volta as legacy and looks past it.
  CHECK(is(cat.auto_module_type({v100, h100}, "590.48.01", ""), "open", true));
  CHECK(is(cat.auto_module_type({v100}, "590.48.01", ""), "proprietary", true));
  // Older installers lack the option: the branch decides, open from 560.
  CHECK(is(cat.auto_module_type({v100, h100}, "570.86.15", ""), "open", false));
  CHECK(is(cat.auto_module_type({v100}, "565.57.01", ""), "open", false));
  CHECK(is(cat.auto_module_type({gh200}, "550.127.08", ""), "proprietary", false));
  // A branch alone: its newest known version's installer.
  auto branch = cat.auto_module_type({v100, h100}, "", "570");
  CHECK(is(branch, "proprietary", true));
  CHECK(branch.installer == "the nvidia-installer of branch 570");
  CHECK(is(cat.auto_module_type({h100}, "", "565"), "open", false));
  // No GPUs named: nothing to recommend from.
  CHECK(is(cat.auto_module_type({}, "580.105.08", ""), "open", false));
}

TEST_CASE("kernelModuleType auto is pinned as the driver container resolves it", "[resolver][compat][kmt]") {
  GB_REQUIRE_SHARED();
  auto recipe = [](const std::string& gpus, const std::string& driver) {
    return "target: {gpus: [" + gpus + "], os: ubuntu22.04, kernels: [5.15.0-126-generic]}\ndriver: {" + driver + "}\n";
  };
  auto pinned = [&](const std::string& tag, const std::string& gpus, const std::string& driver) -> std::string {
    auto o = resolve_shared(tag, recipe(gpus, driver));
    if (!o.lock.ok()) return "refused: " + o.lock.error().message;
    return o.lock->driver.kernel_module_type;
  };
  // nvidia-installer 580 recommends proprietary while a GPU without open
  // modules is present, and the warning says so.
  auto mixed = resolve_shared("v26.7.0", recipe("V100-SXM2-16GB, H100-SXM5-80GB", "version: \"580.105.08\""));
  REQUIRE(mixed.lock.ok());
  CHECK(mixed.lock->driver.kernel_module_type == "proprietary");
  CHECK(has_warning(*mixed.lock, "driver.kernelModuleType auto pinned to proprietary: nvidia-installer 580.105.08 recommends "
                                 "proprietary for V100-SXM2-16GB + H100-SXM5-80GB; the build machine cannot see the GPUs, so "
                                 "the lock and values name it explicitly"));
  CHECK(pinned("v26.7.0", "H100-SXM5-80GB", "version: \"580.105.08\"") == "open");
  CHECK(pinned("v26.7.0", "GB200", "version: \"580.105.08\"") == "open");
  CHECK(pinned("v25.10.1", "V100-SXM2-16GB, H100-SXM5-80GB", "version: \"570.86.16\"") == "proprietary");
  // Precompiled, and conventional with only a branch: the branch's installer.
  CHECK(pinned("v26.7.0", "V100-SXM2-16GB, H100-SXM5-80GB", "mode: precompiled, branch: \"580\"") == "proprietary");
  CHECK(pinned("v26.7.0", "V100-SXM2-16GB, H100-SXM5-80GB", "branch: \"580\"") == "proprietary");
  // Before 560 the container's branch fallback: proprietary.
  auto old = resolve_shared("v26.7.0", recipe("L4", "version: \"535.247.01\""));
  REQUIRE(old.lock.ok());
  CHECK(old.lock->driver.kernel_module_type == "proprietary");
  CHECK(has_warning(*old.lock, "driver.kernelModuleType auto pinned to proprietary for branch 535 (nvidia-installer before "
                               "570.86.16 cannot recommend a type, so the driver container falls back on the branch: open "
                               "from 560); the build machine cannot see the GPUs, so the lock and values name it explicitly"));
  // 560 up to 570.86.15: no recommendation, so open whatever the GPUs, which
  // a V100 cannot run. Refused with both ways out, and each way out works.
  CHECK(pinned("v24.9.2", "V100-SXM2-16GB", "version: \"565.57.01\"") ==
        "refused: recipe.yaml:6: V100-SXM2-16GB (volta) has no open kernel modules, but driver.kernelModuleType auto installs "
        "open modules with branch 565 (nvidia-installer before 570.86.16 cannot recommend a type, so the driver container "
        "falls back on the branch: open from 560); set driver.kernelModuleType: proprietary, or use a driver of 570.86.16 or later");
  CHECK(pinned("v24.9.2", "V100-SXM2-16GB", "version: \"565.57.01\", kernelModuleType: proprietary") == "proprietary");
  CHECK(pinned("v25.10.1", "V100-SXM2-16GB, H100-SXM5-80GB", "version: \"570.86.15\"").find("or use a driver of 570.86.16") !=
        std::string::npos);
  CHECK(pinned("v25.10.1", "V100-SXM2-16GB, H100-SXM5-80GB", "version: \"570.195.03\"") == "proprietary");
  // A GPU that needs open modules with one that has none: no one type serves
  // both. A conventional driver with auto and an installer that recommends
  // lets each node's container pick from its own GPUs: auto stays, and says so.
  auto split = resolve_shared("v26.7.0", recipe("GH200, V100-SXM2-16GB", "version: \"580.105.08\""));
  REQUIRE(split.lock.ok());
  CHECK(split.lock->driver.kernel_module_type == "auto");
  CHECK(has_warning(*split.lock, "driver.kernelModuleType stays auto: GH200-480GB needs open kernel modules and V100-SXM2-16GB has "
                                 "none, so each node's driver container picks from its own GPUs (nvidia-installer 580.105.08 "
                                 "recommends per node); a node with both cannot run either type"));
  // Asked for one type, or a precompiled driver (built with one), or an installer that cannot recommend: refused.
  const std::string both = "refused: recipe.yaml:5: target.gpus: GH200-480GB (grace-hopper) needs open kernel modules and "
                           "V100-SXM2-16GB (volta) has none, so no driver.kernelModuleType serves both";
  CHECK_THAT(pinned("v26.7.0", "GH200, V100-SXM2-16GB", "version: \"580.105.08\", kernelModuleType: proprietary"),
             Catch::StartsWith(both + " (driver.kernelModuleType: auto with a driver of 570.86.16 or later lets each node's "
                                      "driver container pick); or make a recipe for each"));
  CHECK_THAT(pinned("v26.7.0", "GH200, V100-SXM2-16GB", "mode: precompiled, branch: \"580\""),
             Catch::StartsWith(both + ", and a precompiled driver is built with one; or make a recipe for each"));
  CHECK_THAT(pinned("v24.9.2", "GH200, V100-SXM2-16GB", "version: \"565.57.01\""), Catch::StartsWith(both));
  CHECK(pinned("v26.7.0", "B200, P100", "version: \"580.105.08\", kernelModuleType: open").find("B200 (blackwell) needs open kernel modules and "
                                                                         "P100-PCIE-16GB (pascal) has none") != std::string::npos);
  // A host driver is the site's own: pinned from the branch, no warning.
  auto host = resolve_shared("v26.7.0", recipe("H100-SXM5-80GB", "mode: host, version: \"580.105.08\""));
  REQUIRE(host.lock.ok());
  CHECK(host.lock->driver.kernel_module_type == "open");
  for (const auto& w : host.lock->warnings) CHECK(w.find("auto pinned") == std::string::npos);
}

TEST_CASE("driver branch against the release's component matrix", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  // Newer than v24.6's matrix (535, 550, 560): refused for a driver container,
  // naming the release that first lists it.
  CHECK(error_of("v24.6.2", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {version: \"570.195.03\"}\n") ==
        "recipe.yaml:6: driver.version 570.195.03 is newer than GPU Operator v24.6.2 supports: its component matrix lists "
        "driver branches 535, 550, 560; pin driver.branch: \"560\" or older, or use operator.version v24.9.0 or later, which lists it");
  auto pre = "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-126-generic]}\ndriver: {mode: precompiled, branch: \"610\"}\n";
  CHECK(error_of("v24.9.2", pre).find("recipe.yaml:6: driver.branch 610 is newer than GPU Operator v24.9.2 supports: its "
                                      "component matrix lists driver branches 535, 550, 560, 565, 570, 575, 580; pin "
                                      "driver.branch: \"580\" or older, or use operator.version v25.10.1 or later") == 0);
  CHECK(error_of("v26.7.0", pre).empty());
  // A host driver meets the operator only through NVML: a warning.
  auto host = resolve_shared("v24.6.2", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {mode: host, version: \"570.195.03\"}\n");
  REQUIRE(host.lock.ok());
  CHECK(has_warning(*host.lock, "driver.version 570.195.03 is newer than GPU Operator v24.6.2 supports: its component matrix "
                                "lists driver branches 535, 550, 560 (a host driver meets the operator only through NVML); "
                                "consider: pin driver.branch: \"560\" or older, or use operator.version v24.9.0 or later, which lists it"));
  // Inside the range but skipped by the matrix: a warning.
  auto skipped = resolve_shared("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {version: \"590.48.01\"}\n");
  REQUIRE(skipped.lock.ok());
  CHECK(has_warning(*skipped.lock, "driver.version 590.48.01 is not in GPU Operator v26.7.0's component matrix, which lists "
                                   "driver branches 535, 580, 595, 610: NVIDIA has not tested this pair"));
  auto listed = resolve_shared("v25.10.1", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {version: \"610.57.04\"}\n");
  REQUIRE(listed.lock.ok());
  for (const auto& w : listed.lock->warnings) CHECK(w.find("component matrix") == std::string::npos);
}

TEST_CASE("without a component matrix, the chart's default driver is the newest branch known", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  const auto& cat = Catalog::builtin();
  CHECK(cat.operator_driver_branches("v26.3.2") == std::optional<std::vector<int>>({535, 570, 580, 590, 595}));
  CHECK(cat.operator_driver_branches("v26.3.3") == std::optional<std::vector<int>>({535, 570, 580, 590, 595, 610}));
  CHECK_FALSE(cat.operator_driver_branches("v26.9.0"));  // a series the catalog has no matrix for
  CHECK_FALSE(cat.operator_driver_branches("v23.6.2"));
  // The v26.7.0 chart packed from git (placeholder version) named as a later release.
  TempDir dir;
  auto tgz = gbtest::pack_chart(gbtest::shared_chart("v26.7.0", false), dir / "gpu-operator.tgz");
  auto recipe = parse_recipe(recipe_text("v26.9.0", "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {version: \"610.57.04\"}\n"),
                             dir / "recipe.yaml").value_or_throw();
  auto lock = resolve(recipe, load_chart(tgz).value_or_throw(), cat);
  REQUIRE(lock.ok());
  CHECK(has_warning(*lock, "driver.version 610.57.04 is newer than GPU Operator v26.9.0 supports: the catalog has no component "
                           "matrix for it, and its chart defaults to branch 595; consider: pin driver.branch: \"595\" or older"));
}

TEST_CASE("compatible recipes pass, with warnings where due", "[resolver][compat]") {
  GB_REQUIRE_SHARED();
  auto ok = resolve_shared("v26.7.0", "target: {gpus: [B200, GB200], os: ubuntu24.04}\ndriver: {version: \"580.105.08\"}\n");
  REQUIRE(ok.lock.ok());
  CHECK(ok.lock->driver.kernel_module_type == "open");  // auto pinned: what nvidia-installer 580 recommends for Blackwell
  auto unsupported = resolve_shared("v24.9.2", "target: {gpus: [L4], os: ubuntu24.04}\n");
  REQUIRE(unsupported.lock.ok());
  bool warned = false;
  for (const auto& w : unsupported.lock->warnings) warned = warned || w == "GPU Operator v24.9.2 does not list ubuntu24.04 as supported";
  CHECK(warned);
  auto rhel_pre = resolve_shared("v26.7.0", "target: {gpus: [L4], os: rhel9.4, kernels: [5.14.0-427.el9.x86_64]}\n"
                                            "driver: {mode: precompiled, branch: \"580\"}\n");
  REQUIRE(rhel_pre.lock.ok());
  CHECK(one(rhel_pre, "driver") == "nvcr.io/nvidia/driver:580-5.14.0-427.el9.x86_64-rhel9");
  warned = false;
  for (const auto& w : rhel_pre.lock->warnings) warned = warned || w.find("precompiled driver images for Ubuntu only") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("a kernel that makes an invalid tag is refused at its recipe line", "[resolver][recipe]") {
  GB_REQUIRE_SHARED();
  auto err = error_of("v26.7.0", "target: {gpus: [L4], os: rhel9.4, kernels: [5.14.0-427.el9.x86_64, 5.14.0-284.54.1.el9_2.aarch64+64k]}\n"
                                 "driver: {mode: precompiled, branch: \"580\"}\n");
  CHECK(err == "recipe.yaml:5: target.kernels[1]: '5.14.0-284.54.1.el9_2.aarch64+64k' has '+', which an image tag cannot hold, "
               "and driver.mode precompiled names driver images <branch>-<kernel>-<osTag>; build these nodes' driver on the "
               "node (driver.mode: conventional, without target.kernels) or bake it in (driver.mode: host)");
  CHECK(error_of("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04, kernels: [\"6.8.0~rc1-generic\"]}\n"
                            "driver: {mode: precompiled, branch: \"580\"}\n")
            .find("target.kernels[0]: '6.8.0~rc1-generic' has '~'") != std::string::npos);
  // A host driver names no image after the kernel.
  CHECK(error_of("v26.7.0", "target: {gpus: [L4], os: rhel9.4, kernels: [5.14.0-284.54.1.el9_2.aarch64+64k]}\n"
                            "driver: {mode: host}\n").empty());
}

TEST_CASE("workloads choose the VM operands; recipes can ask for any component", "[resolver]") {
  GB_REQUIRE_SHARED();
  auto vm = resolve_shared("v26.7.0", "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [container, vm-passthrough]}\n");
  REQUIRE(vm.lock.ok());
  CHECK(one(vm, "sandboxDevicePlugin") == "nvcr.io/nvidia/kubevirt-gpu-device-plugin:v1.6.0");
  CHECK(vm.by_component.count("vfioManager") == 1);
  // v26.x runs the CC manager and the Kata device plugin only in Kata mode,
  // and the kit deploys kubevirt mode.
  CHECK(vm.by_component.count("ccManager") == 0);
  CHECK(vm.by_component.count("kataSandboxDevicePlugin") == 0);
  CHECK(vm.by_component.count("vgpuDeviceManager") == 0);
  auto kata = resolve_shared("v24.9.2", "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [vm-passthrough]}\n"
                                        "components: {kataManager: true}\n");
  REQUIRE(kata.lock.ok());
  CHECK(kata.by_component.at("kataManager.url").count("nvcr.io/nvidia/cloud-native/kata-gpu-artifacts:ubuntu22.04-535.54.03") == 1);
  auto asked = resolve_shared("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04, workloads: [container, vm-vgpu]}\n"
                                         "components: {dcgm: true, sandboxDevicePlugin: {enabled: true}, node-feature-discovery: false}\n");
  REQUIRE(asked.lock.ok());
  CHECK(asked.by_component.count("dcgm") == 1);
  CHECK(asked.by_component.count("sandboxDevicePlugin") == 1);
  CHECK(asked.by_component.count("node-feature-discovery") == 0);
}

TEST_CASE("operands the operator never runs stay out of the lock", "[resolver][modes]") {
  GB_REQUIRE_SHARED();
  auto has = [](const Outcome& o, const char* c) { return o.by_component.count(c) > 0; };
  for (const auto& tag : k_tags) {
    INFO(tag);
    // MIG manager: only nodes with a MIG-capable GPU get its label.
    auto l4 = resolve_shared(tag, "target: {gpus: [L4], os: ubuntu22.04}\n");
    REQUIRE(l4.lock.ok());
    CHECK_FALSE(has(l4, "migManager"));
    auto mixed = resolve_shared(tag, "target: {gpus: [L4, H100-SXM5-80GB], os: ubuntu22.04}\n");
    REQUIRE(mixed.lock.ok());
    CHECK(has(mixed, "migManager"));
    CHECK(contains(error_of(tag, "target: {gpus: [L4], os: ubuntu22.04}\ncomponents: {migManager: true}\n"),
                   "recipe.yaml:6: components.migManager is on, but the operator runs the MIG manager only on nodes with a "
                   "MIG-capable GPU, and none of target.gpus (L4) is one"));
    // The CUDA init container: the dcgm-exporter's, on OpenShift only.
    auto ubuntu = resolve_shared(tag, k_h100_conventional);
    REQUIRE(ubuntu.lock.ok());
    CHECK_FALSE(has(ubuntu, "operator.initContainer"));
    // VM workloads in kubevirt mode: never both sandbox device plugins.
    auto vm = resolve_shared(tag, "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [vm-passthrough, vm-vgpu]}\n");
    REQUIRE(vm.lock.ok());
    CHECK(has(vm, "sandboxDevicePlugin"));
    CHECK_FALSE(has(vm, "kataSandboxDevicePlugin"));
    CHECK_FALSE(has(vm, "ccManager"));
    CHECK_FALSE(has(vm, "migManager"));  // a container-workload operand
  }
  // OpenShift, v25.10.1 and older: the init container when the exporter runs.
  for (const char* tag : {"v23.9.2", "v24.9.2", "v25.10.1"}) {
    INFO(tag);
    auto ocp = resolve_shared(tag, "target: {gpus: [H100-SXM5-80GB], os: rhcos4.15}\n");
    REQUIRE(ocp.lock.ok());
    CHECK(has(ocp, "operator.initContainer"));
    auto quiet = resolve_shared(tag, "target: {gpus: [H100-SXM5-80GB], os: rhcos4.15}\ncomponents: {dcgmExporter: false}\n");
    REQUIRE(quiet.lock.ok());
    CHECK_FALSE(has(quiet, "operator.initContainer"));
  }
  // Before the sandbox mode (v26.3) the CC manager runs for either VM workload.
  auto cc = resolve_shared("v25.10.1", "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [vm-vgpu]}\n"
                                       "components: {ccManager: true}\n");
  REQUIRE(cc.lock.ok());
  CHECK(has(cc, "ccManager"));
  // v26.7 runs it only in Kata mode; the kit deploys kubevirt: refused at the line.
  std::string kata_only = error_of("v26.7.0", "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [vm-passthrough]}\n"
                                              "components: {kataSandboxDevicePlugin: true}\n");
  CHECK(contains(kata_only, "recipe.yaml:6: components.kataSandboxDevicePlugin is on, but GPU Operator v26.7.0 runs the Kata "
                            "sandbox device plugin only in sandboxWorkloads.mode kata, and the kit deploys VM workloads in "
                            "kubevirt mode; remove components.kataSandboxDevicePlugin"));
  // A VM operand without its workload never starts.
  CHECK(contains(error_of("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04}\ncomponents: {vfioManager: true}\n"),
                 "components.vfioManager is on, but the operator runs the VFIO manager only for target.workloads "
                 "vm-passthrough, which the recipe does not list; add the workload to target.workloads"));
}

TEST_CASE("Kata manager and DRA driver: accepted where the release deploys them", "[resolver][modes]") {
  GB_REQUIRE_SHARED();
  // The Kata manager up to v26.3 (v26.7 never deploys it; its chart has no image).
  for (const char* tag : {"v23.9.2", "v24.3.0", "v24.6.2", "v24.9.2", "v25.10.1"}) {
    INFO(tag);
    auto kata = resolve_shared(tag, "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [vm-passthrough]}\n"
                                    "components: {kataManager: true}\n");
    REQUIRE(kata.lock.ok());
    CHECK(kata.by_component.count("kataManager") == 1);
    CHECK(kata.by_component.at("kataManager.url").size() == 2);
    CHECK(contains(error_of(tag, "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04}\ncomponents: {kataManager: true}\n"),
                   "components.kataManager is on, but the operator runs the Kata manager only for target.workloads vm-passthrough"));
    // No DRA driver before v26.7: refused at the line, saying what to do.
    CHECK(contains(error_of(tag, "target: {gpus: [L4], os: ubuntu22.04}\ndriver: {version: \"580.105.08\"}\n"
                                 "components: {draDriver: true}\n"),
                   "recipe.yaml:7: components.draDriver: chart gpu-operator " + std::string(tag) +
                       " has no such component; remove components.draDriver or use a release that has it"));
  }
  CHECK(contains(error_of("v26.7.0", "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [vm-passthrough]}\n"
                                     "components: {kataManager: true}\n"),
                 "recipe.yaml:6: components.kataManager is on, but GPU Operator v26.7.0 never deploys the Kata manager (its state "
                 "is always off from v26.7.0 on); remove components.kataManager or use an operator release before v26.7.0"));

  // The DRA driver: the GPUCluster stack instead of the ClusterPolicy.
  const std::string dra = "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04}\ndriver: {version: \"580.105.08\"}\n"
                          "components: {draDriver: true";
  auto o = resolve_shared("v26.7.0", dra + "}\n");
  REQUIRE(o.lock.ok());
  CHECK(one(o, "draDriver") == "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0");
  for (const char* on : {"operator", "validator", "driver", "driver.manager", "dcgmExporter", "node-feature-discovery"})
    CHECK(o.by_component.count(on) == 1);
  for (const char* off : {"toolkit", "devicePlugin", "gfd", "migManager", "nodeStatusExporter"}) {
    INFO(off);
    CHECK(o.by_component.count(off) == 0);
  }
  CHECK(contains(error_of("v26.7.0", dra + ", gfd: true}\n"),
                 "components.gfd is on, but components.draDriver makes the chart deploy the GPUCluster (DRA) stack instead of "
                 "the ClusterPolicy, and the GPU feature discovery is a ClusterPolicy operand"));
  CHECK(contains(error_of("v26.7.0", dra + "}\nmig: {config: all-1g.10gb}\n"), "recipe.yaml:8: mig.config is set, but components.draDriver"));
  CHECK(contains(error_of("v26.7.0", dra + "}\nmig: {strategy: mixed}\n"), "mig.strategy is set, but components.draDriver"));
  CHECK(contains(error_of("v26.7.0", dra + "}\nsharing: {timeSlicing: {replicas: 4}}\n"),
                 "sharing.timeSlicing is set, but components.draDriver"));
  CHECK(contains(error_of("v26.7.0", "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [container, vm-vgpu]}\n"
                                     "driver: {version: \"580.105.08\"}\ncomponents: {draDriver: true}\n"),
                 "target.workloads lists vm-vgpu, but components.draDriver"));
}

TEST_CASE("destinations and the lock round trip", "[resolver][lock]") {
  GB_REQUIRE_SHARED();
  auto o = resolve_shared("v24.9.2", "target: {gpus: [L4], os: ubuntu22.04, platforms: [linux/amd64, linux/arm64]}\n"
                                     "extraImages: [busybox:1.36]\ndestination: {registry: \"reg.site:5000\", prefix: gpu/ops}\n");
  REQUIRE(o.lock.ok());
  auto* nfd = o.lock->find("registry.k8s.io/nfd/node-feature-discovery:v0.16.6");
  REQUIRE(nfd);
  CHECK(nfd->destination == "reg.site:5000/gpu/ops/nfd/node-feature-discovery:v0.16.6");
  CHECK(nfd->platforms == std::vector<std::string>{"linux/amd64", "linux/arm64"});
  REQUIRE(o.lock->find("docker.io/library/busybox:1.36"));
  CHECK(o.lock->find("docker.io/library/busybox:1.36")->destination == "reg.site:5000/gpu/ops/library/busybox:1.36");
  for (size_t i = 1; i < o.lock->images.size(); ++i) CHECK(o.lock->images[i - 1].source < o.lock->images[i].source);

  std::string json = lock_to_json(o.lock.value());
  auto back = parse_lock(json, "x.lock.json").value_or_throw();
  CHECK(lock_to_json(back) == json);
  CHECK(back.images.size() == o.lock->images.size());

  std::string newer = std::regex_replace(json, std::regex("\"schemaVersion\": 1"), "\"schemaVersion\": 2");
  auto refused = parse_lock(newer, "x.lock.json");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("x.lock.json: lock schema 2 is newer than this gpubundle reads") == 0);
  auto broken = parse_lock("{\"schemaVersion\": 1}", "y.json");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message.find("y.json") == 0);
}

TEST_CASE("catalog lookups by name, alias and PCI id", "[catalog]") {
  const auto& cat = Catalog::builtin();
  REQUIRE(cat.find_gpu("h200"));
  CHECK(cat.find_gpu("h200")->name == "H200-SXM-141GB");
  CHECK(cat.find_gpu("10DE:2335") == cat.find_gpu("H200"));
  CHECK(cat.find_gpu("0x233510DE") == cat.find_gpu("H200"));
  CHECK(cat.find_gpu("B200")->open_modules_required);
  CHECK_FALSE(cat.find_gpu("H100-SXM5-80GB")->open_modules_required);
  CHECK(cat.find_gpu("nope") == nullptr);
  CHECK(cat.os_supported("v24.9.2", "ubuntu22.04") == true);
  CHECK(cat.os_supported("v26.7.0", "rhel9") == true);
  CHECK_FALSE(cat.os_supported("v30.1.0", "ubuntu22.04").has_value());
}

TEST_CASE("a conventional recipe with package sources: the server image joins the closure", "[resolver][package-repo]") {
  GB_REQUIRE_SHARED();
  TempDir keys;
  const std::string sources =
      "packages:\n  sources:\n  - {name: ubuntu, type: apt, url: 'http://archive.ubuntu.com/ubuntu', suites: [jammy], "
      "components: [main], keyring: ubuntu.gpg}\n";
  auto o = resolve_shared("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-122-generic]}\n" + sources);
  INFO((o.lock ? std::string() : o.lock.error().message));
  REQUIRE(o.lock.ok());
  CHECK(one(o, k_package_server_component) == k_default_package_server_image);
  CHECK_FALSE(o.lock->package_repo);  // the build fills it in with the key

  auto own = resolve_shared("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-122-generic]}\n" + sources +
                                           "  server: {image: 'registry.site/tools/httpd:1.0'}\n");
  REQUIRE(own.lock.ok());
  CHECK(one(own, k_package_server_component) == "registry.site/tools/httpd:1.0");

  // Without sources, or in another driver mode, nothing changes.
  auto plain = resolve_shared("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-122-generic]}\n");
  REQUIRE(plain.lock.ok());
  CHECK(one(plain, k_package_server_component).empty());

  // The packages are the kernels' own: no kernels, no repository.
  CHECK(contains(error_of("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04}\n" + sources),
                 "target.kernels: a site package repository (packages.sources) needs the kernel release"));
  // An rpm-md source cannot serve Ubuntu nodes.
  CHECK(contains(error_of("v26.7.0", "target: {gpus: [L4], os: ubuntu22.04, kernels: [5.15.0-122-generic]}\n"
                                     "packages:\n  sources:\n  - {name: rhel, type: rpm-md, url: 'http://x/rhel', keyring: k.asc}\n"),
                 "packages.sources[0].type: rpm-md source 'rhel' cannot serve ubuntu22.04 nodes"));
}
