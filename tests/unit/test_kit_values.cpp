// values.yaml of the install kit: every key exists in the chart it targets
// (checked against every shipped upstream chart, independently of the kit's
// own check), and the digest/tag, pull-secret and driver rules hold.

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "kit/kit.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "recipes/resolver.hpp"
#include "signing/digest.hpp"

namespace fs = std::filesystem;
using namespace gb;
using namespace gb::recipes;
using namespace gb::signing;

namespace {

fs::path upstream() { return fs::path(GB_SHARED_DIR) / "upstream" / "gpu-operator"; }

bool have_upstream() {
  if (fs::is_directory(upstream())) return true;
  WARN("skipped: " << upstream().string() << " is absent (shared upstream charts)");
  SUCCEED();
  return false;
}

std::vector<std::string> shipped_versions() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(upstream()))
    if (e.is_directory() && fs::exists(e.path() / "values.yaml")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Case {
  std::string version;
  std::string mode = "conventional";  // conventional | precompiled | host
  std::string toolkit = "container";
  bool digests = true;
  bool pull_secret = true;
  std::string workloads = "[container]";
  std::string os = "ubuntu22.04";
  std::string components = "{dcgmExporter: {enabled: true, serviceMonitor: true}, gds: {enabled: false}}";
  bool settings = true;  // mig and sharing
  std::string driver_version = "550.127.08";
  std::string monitoring = {};  // a recipe monitoring section, as YAML flow text
};

std::string recipe_text(const Case& c) {
  std::string driver = c.mode == "precompiled" ? "{mode: precompiled, branch: \"550\", kernelModuleType: open}"
                                               : "{mode: " + c.mode + ", version: \"" + c.driver_version + "\", kernelModuleType: open}";
  std::string s = "apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: kit-test}\n";
  s += "operator: {version: " + c.version + "}\n";
  s += "target: {gpus: [H100-SXM5-80GB], os: " + c.os + ", kernels: [5.15.0-126-generic], platforms: [linux/amd64], "
       "workloads: " + c.workloads + "}\n";
  s += "driver: " + driver + "\n";
  s += "toolkit: {mode: " + c.toolkit + "}\n";
  s += "components: " + c.components + "\n";
  if (c.settings) {
    s += "mig: {strategy: mixed, config: all-1g.10gb}\n";
    s += "sharing: {timeSlicing: {replicas: 4}}\n";
  }
  s += "extraImages: [nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04]\n";
  if (c.pull_secret) s += "pullSecret: site-pull\n";
  if (!c.monitoring.empty()) s += "monitoring: " + c.monitoring + "\n";
  return s;
}

struct Resolved {
  Chart chart;
  Lock lock;
};

Resolved resolve_case(const Case& c) {
  Chart chart = load_chart(upstream() / c.version).value_or_throw();
  Recipe recipe = parse_recipe(recipe_text(c), "kit-test.yaml").value_or_throw();
  Lock lock = resolve(recipe, chart, Catalog::builtin()).value_or_throw();
  if (c.digests)
    for (auto& i : lock.images) i.digest = sha256_digest(i.source);  // fake but well-formed
  return {std::move(chart), std::move(lock)};
}

kit::KitOptions site(const std::string& registry = "registry.site:5000/gpu") {
  kit::KitOptions o;
  o.registry = kit::SiteRegistry::parse(registry).value_or_throw();
  return o;
}

// Independent of the kit's own lookup: walk the values files as plain YAML
// (parsed once per chart folder). The node at PATH, or an invalid node.
YAML::Node values_file_node(const fs::path& chart_dir, const std::string& path) {
  static std::map<std::string, std::pair<YAML::Node, YAML::Node>> cache;
  auto it = cache.find(chart_dir.string());
  if (it == cache.end()) {
    fs::path sub = chart_dir / "charts" / "node-feature-discovery" / "values.yaml";
    it = cache.emplace(chart_dir.string(), std::make_pair(YAML::LoadFile((chart_dir / "values.yaml").string()),
                                                          fs::exists(sub) ? YAML::LoadFile(sub.string()) : YAML::Node()))
             .first;
  }
  auto parts = split(path, '.');
  YAML::Node node;
  node.reset(it->second.first);  // reset() rebinds; operator= would overwrite the cached tree
  size_t from = 0;
  if (parts[0] == "node-feature-discovery" && it->second.second) {
    node.reset(it->second.second);
    from = 1;
  }
  for (size_t i = from; i < parts.size(); ++i) {
    const YAML::Node& view = node;
    if (!view.IsMap() || !view[parts[i]]) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(view[parts[i]]);
  }
  return node;
}

bool in_values_file(const fs::path& chart_dir, const std::string& path) {
  return values_file_node(chart_dir, path).IsDefined();
}

// A key the user names below a map the chart leaves empty (additionalLabels: {}).
bool under_empty_map(const fs::path& chart_dir, const std::string& path) {
  auto dot = path.rfind('.');
  if (dot == std::string::npos) return false;
  YAML::Node node = values_file_node(chart_dir, path.substr(0, dot));
  return node.IsMap() && node.size() == 0;
}

bool is_exception(const std::string& path) {
  for (const auto& e : kit::values_key_exceptions())
    if (path == e.path) return true;
  return false;
}

YAML::Node values_of(const Resolved& r, const kit::KitOptions& o = site()) {
  auto text = kit::make_values_yaml(r.lock, r.chart, o);
  INFO((text ? std::string() : text.error().message));
  REQUIRE(text.ok());
  return YAML::Load(*text);
}

std::string str(const YAML::Node& n) { return n ? n.as<std::string>() : std::string("<absent>"); }

}  // namespace

TEST_CASE("every values key exists in every shipped chart version", "[kit][values]") {
  if (!have_upstream()) return;
  auto versions = shipped_versions();
  REQUIRE(versions.size() >= 6);
  std::set<std::string> exceptions_used;
  for (const auto& v : versions) {
    for (const std::string mode : {"conventional", "precompiled", "host"}) {
      for (const std::string toolkit : {"container", "host"}) {
        Case c{v, mode, toolkit};
        auto r = resolve_case(c);
        YAML::Node values = values_of(r);
        auto leaves = kit::leaf_paths(values);
        REQUIRE(leaves.size() > 20);
        for (const auto& p : leaves) {
          INFO(v << " " << mode << " toolkit " << toolkit << ": " << p);
          bool free_form = under_empty_map(upstream() / v, p);
          bool ok = in_values_file(upstream() / v, p) || is_exception(p) || free_form;
          CHECK(ok);
          if (!in_values_file(upstream() / v, p) && !free_form) exceptions_used.insert(p);
        }
        CHECK(kit::unknown_keys(values, r.chart).empty());
        CHECK(values["toolkit"]["enabled"].as<bool>() == (toolkit == "container"));
      }
    }
  }
  // Each documented exception is needed somewhere: a key that exists
  // everywhere does not belong on the list.
  for (const auto& e : kit::values_key_exceptions()) {
    bool absent_somewhere = false;
    for (const auto& v : versions) absent_somewhere = absent_somewhere || !in_values_file(upstream() / v, e.path);
    INFO(e.path);
    CHECK(absent_somewhere);
    CHECK(std::string(e.reason).size() > 20);
  }
  CHECK(exceptions_used.count("operator.version"));
  CHECK(exceptions_used.count("validator.version"));
}

TEST_CASE("digest pins for ClusterPolicy operands, tags for Helm-rendered images and the driver", "[kit][values]") {
  if (!have_upstream()) return;
  auto r = resolve_case({"v26.7.0"});
  YAML::Node v = values_of(r);
  auto digest_of = [&](const std::string& needle) {
    for (const auto& i : r.lock.images)
      if (i.source.find(needle) != std::string::npos) return i.digest;
    FAIL("no image " << needle);
    return std::string();
  };
  // Operator Deployment and NFD are rendered by Helm: tags only.
  CHECK(str(v["operator"]["repository"]) == "registry.site:5000/gpu/nvidia");
  CHECK(str(v["operator"]["image"]) == "gpu-operator");
  CHECK(str(v["operator"]["version"]) == "v26.7.0");
  CHECK(str(v["node-feature-discovery"]["image"]["repository"]) == "registry.site:5000/gpu/nfd/node-feature-discovery");
  CHECK(str(v["node-feature-discovery"]["image"]["tag"]) == "v0.19.0");
  // Driver: bare version, the operator appends -<osTag>.
  CHECK(str(v["driver"]["repository"]) == "registry.site:5000/gpu/nvidia");
  CHECK(str(v["driver"]["image"]) == "driver");
  CHECK(str(v["driver"]["version"]) == "550.127.08");
  CHECK(v["driver"]["enabled"].as<bool>());
  CHECK_FALSE(v["driver"]["usePrecompiled"].as<bool>());
  CHECK(str(v["driver"]["kernelModuleType"]) == "open");
  CHECK_FALSE(v["driver"]["useOpenKernelModules"]);
  // driver.manager is also rendered into the operator's DRIVER_MANAGER_IMAGE env: tag.
  CHECK(str(v["driver"]["manager"]["version"]) == "v0.12.0");
  CHECK(str(v["driver"]["manager"]["repository"]) == "registry.site:5000/gpu/nvidia/cloud-native");
  // v26.7 renders the validator into the operator's VALIDATOR_IMAGE env
  // (the DRA validator) as repository/image:version: tag.
  CHECK(str(v["validator"]["version"]) == "v26.7.0");
  // ClusterPolicy operands: digests.
  CHECK(str(v["devicePlugin"]["version"]) == digest_of("k8s-device-plugin"));
  CHECK(str(v["gfd"]["version"]) == digest_of("k8s-device-plugin"));
  CHECK(str(v["toolkit"]["version"]) == digest_of("container-toolkit"));
  CHECK(str(v["dcgmExporter"]["version"]) == digest_of("dcgm-exporter"));
  CHECK(str(v["migManager"]["version"]) == digest_of("k8s-mig-manager"));
  CHECK(starts_with(str(v["toolkit"]["version"]), "sha256:"));
  // The appVersion trap: explicit release for the image not in the lock.
  CHECK(str(v["nodeStatusExporter"]["version"]) == "v26.7.0");
  // Recipe settings.
  CHECK(str(v["mig"]["strategy"]) == "mixed");
  CHECK(v["dcgmExporter"]["serviceMonitor"]["enabled"].as<bool>());
  CHECK(v["dcgmExporter"]["enabled"].as<bool>());
  CHECK_FALSE(v["gds"]["enabled"].as<bool>());
  CHECK(str(v["devicePlugin"]["config"]["name"]) == kit::k_time_slicing_configmap);
  CHECK(str(v["devicePlugin"]["config"]["default"]) == kit::k_time_slicing_key);
  CHECK_FALSE(v["operator"]["initContainer"]);  // gone from v26.x
}

TEST_CASE("unmirrored locks pin tags; precompiled and host drivers", "[kit][values]") {
  if (!have_upstream()) return;
  SECTION("no digests yet: tags everywhere") {
    auto r = resolve_case({"v26.7.0", "conventional", "container", false});
    YAML::Node v = values_of(r);
    CHECK(str(v["devicePlugin"]["version"]) == "v0.20.0");
    CHECK(str(v["validator"]["version"]) == "v26.7.0");
  }
  SECTION("precompiled: branch, never a digest") {
    auto r = resolve_case({"v26.7.0", "precompiled"});
    YAML::Node v = values_of(r);
    CHECK(str(v["driver"]["version"]) == "550");
    CHECK(v["driver"]["usePrecompiled"].as<bool>());
    CHECK(str(v["driver"]["repository"]) == "registry.site:5000/gpu/nvidia");
  }
  SECTION("host driver and host toolkit") {
    auto r = resolve_case({"v26.7.0", "host", "host"});
    YAML::Node v = values_of(r);
    CHECK_FALSE(v["driver"]["enabled"].as<bool>());
    CHECK_FALSE(v["driver"]["usePrecompiled"]);
    CHECK_FALSE(v["driver"]["kernelModuleType"]);
    CHECK_FALSE(v["toolkit"]["enabled"].as<bool>());
  }
}

TEST_CASE("v24.x charts get useOpenKernelModules and operator.initContainer", "[kit][values]") {
  if (!have_upstream()) return;
  Case c{"v24.9.2"};
  c.os = "rhcos4.16";  // the init container is OpenShift's
  auto r = resolve_case(c);
  YAML::Node v = values_of(r);
  CHECK(v["driver"]["useOpenKernelModules"].as<bool>());
  CHECK_FALSE(v["driver"]["kernelModuleType"]);
  CHECK(str(v["operator"]["initContainer"]["repository"]) == "registry.site:5000/gpu/nvidia");
  CHECK(str(v["operator"]["initContainer"]["image"]) == "cuda");
  CHECK(str(v["validator"]["repository"]) == "registry.site:5000/gpu/nvidia/cloud-native");
  CHECK(str(v["node-feature-discovery"]["image"]["tag"]) == "v0.16.6");
}

TEST_CASE("pull secrets: strings for operator keys, {name:} objects for NFD, none on driver managers", "[kit][values]") {
  if (!have_upstream()) return;
  auto r = resolve_case({"v25.10.1"});
  YAML::Node v = values_of(r);
  for (const char* key : {"operator", "validator", "driver", "toolkit", "devicePlugin", "gfd", "migManager", "dcgmExporter"}) {
    INFO(key);
    REQUIRE(v[key]["imagePullSecrets"].IsSequence());
    REQUIRE(v[key]["imagePullSecrets"].size() == 1);
    CHECK(v[key]["imagePullSecrets"][0].IsScalar());
    CHECK(str(v[key]["imagePullSecrets"][0]) == "site-pull");
  }
  auto nfd = v["node-feature-discovery"]["imagePullSecrets"];
  REQUIRE(nfd.IsSequence());
  REQUIRE(nfd[0].IsMap());
  CHECK(str(nfd[0]["name"]) == "site-pull");
  CHECK_FALSE(v["driver"]["manager"]["imagePullSecrets"]);

  auto plain = resolve_case({"v25.10.1", "conventional", "container", true, false});
  YAML::Node w = values_of(plain);
  CHECK_FALSE(w["toolkit"]["imagePullSecrets"]);
  CHECK_FALSE(w["node-feature-discovery"]["imagePullSecrets"]);
}

TEST_CASE("OS-suffixed operands drop the suffix from tags, keep digests", "[kit][values]") {
  if (!have_upstream()) return;
  auto r = resolve_case({"v25.10.1", "conventional", "container", false});
  LockImage gds;
  gds.components = {"gds"};
  gds.source = "nvcr.io/nvidia/cloud-native/nvidia-fs:2.26.6-ubuntu22.04";
  gds.platforms = {"linux/amd64"};
  r.lock.images.push_back(gds);
  r.lock.recipe_spec = R"({"components":{}})";
  YAML::Node v = values_of(r);
  CHECK(str(v["gds"]["version"]) == "2.26.6");
  CHECK(str(v["gds"]["repository"]) == "registry.site:5000/gpu/nvidia/cloud-native");
  r.lock.images.back().digest = sha256_digest("gds");
  YAML::Node w = values_of(r);
  CHECK(str(w["gds"]["version"]) == sha256_digest("gds"));
}

TEST_CASE("a lock naming a component the chart lacks is refused", "[kit][values]") {
  if (!have_upstream()) return;
  auto r = resolve_case({"v24.9.2"});
  LockImage dra;
  dra.components = {"draDriver"};
  dra.source = "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0";
  r.lock.images.push_back(dra);
  auto text = kit::make_values_yaml(r.lock, r.chart, site());
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().message.find("draDriver.repository") != std::string::npos);
}

TEST_CASE("draDriver and the VM driver managers are rehomed on v26.7", "[kit][values]") {
  if (!have_upstream()) return;
  auto r = resolve_case({"v26.7.0"});
  for (const auto& [comp, src] : std::vector<std::pair<std::string, std::string>>{
           {"draDriver", "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0"},
           {"vgpuManager.driverManager", "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"},
           {"vfioManager.driverManager", "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"}}) {
    LockImage i;
    i.components = {comp};
    i.source = src;
    i.digest = sha256_digest(src);
    r.lock.images.push_back(i);
  }
  YAML::Node v = values_of(r);
  CHECK(str(v["draDriver"]["repository"]) == "registry.site:5000/gpu/dra-driver-nvidia");
  CHECK(str(v["draDriver"]["version"]) == sha256_digest("registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0"));
  CHECK(str(v["vgpuManager"]["driverManager"]["repository"]) == "registry.site:5000/gpu/nvidia/cloud-native");
  CHECK(str(v["vfioManager"]["driverManager"]["image"]) == "k8s-driver-manager");
  CHECK(kit::unknown_keys(v, r.chart).empty());
}

TEST_CASE("VM workloads switch on the sandbox operands", "[kit][values]") {
  if (!have_upstream()) return;
  for (const auto& version : shipped_versions()) {
    INFO(version);
    Case c{version};
    auto container = values_of(resolve_case(c));
    CHECK_FALSE(container["sandboxWorkloads"]);
    c.workloads = "[container, vm-passthrough]";
    auto mixed = values_of(resolve_case(c));
    CHECK(str(mixed["sandboxWorkloads"]["enabled"]) == "true");
    CHECK(str(mixed["sandboxWorkloads"]["defaultWorkload"]) == "container");
    c.workloads = "[vm-vgpu]";
    c.components = "{gds: false}";  // the DCGM exporter is a container-workload operand
    auto vgpu = values_of(resolve_case(c));
    CHECK(str(vgpu["sandboxWorkloads"]["defaultWorkload"]) == "vm-vgpu");
    // The mode only where the release has one (v26.x).
    CHECK(str(vgpu["sandboxWorkloads"]["mode"]) == (in_values_file(upstream() / version, "sandboxWorkloads.mode") ? "kubevirt" : "<absent>"));
    // An operand of another VM workload is not carried, so it is switched off
    // (the operator would deploy it from upstream otherwise); one carried is left on.
    if (in_values_file(upstream() / version, "vgpuDeviceManager.enabled")) {
      CHECK(str(mixed["vgpuDeviceManager"]["enabled"]) == "false");
      CHECK_FALSE(vgpu["vgpuDeviceManager"]["enabled"]);
    }
    if (in_values_file(upstream() / version, "vfioManager.enabled")) {
      CHECK_FALSE(mixed["vfioManager"]["enabled"]);
      CHECK(str(vgpu["vfioManager"]["enabled"]) == "false");
    }
    // Without VM workloads too: the switch is written, not left to the chart's
    // default (the operator's own default for an absent switch is on for
    // several operands, dcgm among them).
    if (in_values_file(upstream() / version, "vgpuDeviceManager.enabled"))
      CHECK(str(container["vgpuDeviceManager"]["enabled"]) == "false");
    CHECK(str(container["dcgm"]["enabled"]) == "false");
    CHECK(str(container["gds"]["enabled"]) == "false");
  }
}

TEST_CASE("Kata manager: every runtime class's artifacts from the site, by tag", "[kit][values][modes]") {
  if (!have_upstream()) return;
  int charts = 0;
  for (const auto& version : shipped_versions()) {
    if (!in_values_file(upstream() / version, "kataManager.repository")) continue;  // v26.7 never deploys it
    INFO(version);
    ++charts;
    Case c{version};
    c.workloads = "[vm-passthrough]";
    c.components = "{kataManager: true}";
    c.settings = false;
    auto r = resolve_case(c);
    YAML::Node v = values_of(r);
    CHECK(v["kataManager"]["enabled"].as<bool>());
    CHECK(str(v["kataManager"]["repository"]) == "registry.site:5000/gpu/nvidia/cloud-native");
    YAML::Node chart_classes = YAML::LoadFile((upstream() / version / "values.yaml").string())["kataManager"]["config"]["runtimeClasses"];
    YAML::Node classes = v["kataManager"]["config"]["runtimeClasses"];
    REQUIRE(classes.IsSequence());
    REQUIRE(classes.size() == chart_classes.size());
    for (size_t i = 0; i < classes.size(); ++i) {
      std::string url = str(chart_classes[i]["artifacts"]["url"]);
      std::string tag = url.substr(url.rfind(':'));
      // The kata manager pulls the reference as written: the site path, the tag kept.
      CHECK(str(classes[i]["artifacts"]["url"]) == "registry.site:5000/gpu/nvidia/cloud-native/kata-gpu-artifacts" + tag);
      CHECK(str(classes[i]["name"]) == str(chart_classes[i]["name"]));
      CHECK(classes[i]["nodeSelector"].size() == chart_classes[i]["nodeSelector"].size());
    }
    CHECK(kit::unknown_keys(v, r.chart).empty());
    // An artifact the chart's runtime classes do not name: the lock is not this chart's.
    LockImage stray;
    stray.components = {"kataManager.url"};
    stray.source = "nvcr.io/nvidia/cloud-native/kata-gpu-artifacts:ubuntu24.04-999.1.1";
    r.lock.images.push_back(stray);
    auto refused = kit::make_values_yaml(r.lock, r.chart, site());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("image " + stray.source + " is not in kataManager.config.runtimeClasses") != std::string::npos);
  }
  CHECK(charts >= 5);
}

TEST_CASE("DRA driver: the kit deploys the GPUCluster CR instead of the ClusterPolicy", "[kit][values][modes]") {
  if (!have_upstream()) return;
  Case c{"v26.7.0"};
  c.components = "{draDriver: true}";
  c.settings = false;
  c.driver_version = "580.105.08";
  auto r = resolve_case(c);
  YAML::Node v = values_of(r);
  CHECK(v["gpuCluster"]["deployCR"].as<bool>());
  CHECK_FALSE(v["clusterPolicy"]["deployCR"].as<bool>());  // templates/validations.yaml refuses both
  CHECK(v["driver"]["nvidiaDriverCRD"]["enabled"].as<bool>());  // and a driver needs the NVIDIADriver CR
  CHECK_FALSE(v["draDriver"]["enabled"]);                          // the chart has no such key
  CHECK(starts_with(str(v["draDriver"]["version"]), "sha256:"));    // the operator's ImagePath takes digests
  CHECK(str(v["validator"]["version"]) == "v26.7.0");              // VALIDATOR_IMAGE, rendered by Helm
  CHECK_FALSE(v["toolkit"]["repository"]);                         // not in the GPUCluster stack
  CHECK(kit::unknown_keys(v, r.chart).empty());

  c.mode = "host";
  auto host = values_of(resolve_case(c));
  CHECK(host["gpuCluster"]["deployCR"].as<bool>());
  CHECK_FALSE(host["driver"]["nvidiaDriverCRD"]);
}

TEST_CASE("no digest where Helm renders repository/image:version, in any shipped chart", "[kit][values][modes]") {
  if (!have_upstream()) return;
  for (const auto& version : shipped_versions()) {
    INFO(version);
    auto r = resolve_case({version});
    YAML::Node v = values_of(r);
    // _helpers.tpl: gpu-operator.fullimage and driver-manager.fullimage in
    // every release, validator.fullimage (VALIDATOR_IMAGE) from v26.7.
    CHECK_FALSE(starts_with(str(v["operator"]["version"]), "sha256:"));
    CHECK_FALSE(starts_with(str(v["driver"]["manager"]["version"]), "sha256:"));
    bool rendered = version == "v26.7.0";
    CHECK(starts_with(str(v["validator"]["version"]), "sha256:") == !rendered);
    // The ClusterPolicy's own operands keep their digest pins.
    CHECK(starts_with(str(v["devicePlugin"]["version"]), "sha256:"));
  }
}

TEST_CASE("driver upgrade policy: one node at a time, drain on, in every shipped chart", "[kit][values][upgrade]") {
  if (!have_upstream()) return;
  auto versions = shipped_versions();
  REQUIRE(versions.size() >= 6);
  for (const auto& version : versions) {
    INFO(version);
    auto r = resolve_case({version});
    YAML::Node p = values_of(r)["driver"]["upgradePolicy"];
    REQUIRE(p.IsMap());
    CHECK(p["autoUpgrade"].as<bool>());
    CHECK(p["maxParallelUpgrades"].as<int>() == 1);
    CHECK(p["maxUnavailable"].as<int>() == 1);
    CHECK(p["drain"]["enable"].as<bool>());
    CHECK_FALSE(p["drain"]["force"].as<bool>());
    CHECK_FALSE(p["drain"]["deleteEmptyDir"].as<bool>());
    CHECK(p["drain"]["timeoutSeconds"].as<int>() == 300);
    // Pod deletion and the jobs to wait for stay as the chart has them.
    CHECK_FALSE(p["gpuPodDeletion"]);
    CHECK_FALSE(p["waitForCompletion"]);
  }
  SECTION("a host driver has no upgrade policy") {
    auto r = resolve_case({"v26.7.0", "host"});
    CHECK_FALSE(values_of(r)["driver"]["upgradePolicy"]);
  }
  SECTION("only the keys the chart has") {
    auto r = resolve_case({"v26.7.0"});
    YAML::Node policy = r.chart.values["driver"]["upgradePolicy"];
    policy.remove("drain");
    policy.remove("maxUnavailable");
    YAML::Node p = values_of(r)["driver"]["upgradePolicy"];
    CHECK(p["maxParallelUpgrades"].as<int>() == 1);
    CHECK_FALSE(p["drain"]);
    CHECK_FALSE(p["maxUnavailable"]);
  }
}

TEST_CASE("Prometheus selector labels: kube-prometheus-stack's by default, the recipe's when given", "[kit][values][monitoring]") {
  if (!have_upstream()) return;
  auto file = [](const kit::Kit& k, const std::string& path) {
    for (const auto& f : k.files)
      if (f.path == path) return YAML::Load(f.content);
    FAIL("no " << path);
    return YAML::Node();
  };
  auto kit_of = [](const Resolved& r) {
    kit::KitOptions o;
    o.registry = kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();
    return kit::make_kit(r.lock, r.chart, o).value_or_throw();
  };
  SECTION("default: release=kube-prometheus-stack on the rule and the ServiceMonitor, grafana_dashboard=1 on the ConfigMap") {
    for (const auto& version : shipped_versions()) {
      INFO(version);
      auto r = resolve_case({version});
      CHECK(values_of(r)["dcgmExporter"]["serviceMonitor"]["additionalLabels"]["release"].as<std::string>() == "kube-prometheus-stack");
      auto k = kit_of(r);
      CHECK(file(k, "alerts.yaml")["metadata"]["labels"]["release"].as<std::string>() == "kube-prometheus-stack");
      auto cm = file(k, "monitoring/grafana-dashboard-configmap.yaml");
      CHECK(cm["metadata"]["labels"]["grafana_dashboard"].as<std::string>() == "1");
      CHECK_FALSE(cm["metadata"]["labels"]["release"]);
    }
  }
  SECTION("the recipe's labels replace the defaults everywhere") {
    Case c{"v26.7.0"};
    c.monitoring = "{prometheusLabels: {prometheus: site, team.example.com/owner: gpu}, dashboardLabels: {grafana: dashboards}}";
    auto r = resolve_case(c);
    auto sm = values_of(r)["dcgmExporter"]["serviceMonitor"]["additionalLabels"];
    CHECK(sm.size() == 2);
    CHECK(sm["prometheus"].as<std::string>() == "site");
    CHECK(sm["team.example.com/owner"].as<std::string>() == "gpu");
    auto k = kit_of(r);
    auto rule = file(k, "alerts.yaml")["metadata"]["labels"];
    CHECK(rule["prometheus"].as<std::string>() == "site");
    CHECK_FALSE(rule["release"]);
    auto cm = file(k, "monitoring/grafana-dashboard-configmap.yaml")["metadata"]["labels"];
    CHECK(cm["grafana"].as<std::string>() == "dashboards");
    CHECK_FALSE(cm["grafana_dashboard"]);
    for (const auto& f : k.files)
      if (f.path == "install.sh") CHECK(f.content.find("'prometheus: \"site\", team.example.com/owner: \"gpu\"'") != std::string::npos);
  }
  SECTION("a lock's labels are checked as the recipe's are") {
    auto r = resolve_case({"v26.7.0"});
    auto spec = nlohmann::json::parse(r.lock.recipe_spec);
    spec["monitoring"] = {{"prometheusLabels", {{"release", "x\nhostNetwork: true"}}}};
    r.lock.recipe_spec = spec.dump();
    auto bad = kit::kit_recipe(r.lock);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("monitoring.prometheusLabels") != std::string::npos);
  }
}
