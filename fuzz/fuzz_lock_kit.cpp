// Lock JSON (recipes/lock.hpp) made into the install kit (kit/kit.hpp
// make_kit, write_kit), as `overrides`, `import` and `bundle create` do with a
// lock from outside: a fixed chart, site registry and namespace, the kit
// written into a scratch folder. A lock the kit accepts must give YAML and
// JSON files that parse, text free of control characters other than \n and \t
// (lock strings pasted into scripts and YAML must not break out of a line),
// and files only below the kit folder, exactly the ones the kit lists.
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <yaml-cpp/yaml.h>

#include "fuzz/fuzz_input.hpp"
#include "kit/kit.hpp"
#include "recipes/lock.hpp"

namespace {

namespace fs = std::filesystem;

// The unit tests' tiny chart (tests/unit/test_kit_files.cpp), with the values
// keys of the other components a lock names.
const gb::recipes::Chart& chart() {
  static const gb::recipes::Chart c = [] {
    gb::recipes::Chart c;
    c.name = "gpu-operator";
    c.version = "v25.10.1";
    c.values_text = R"(
operator: {repository: nvcr.io/nvidia, image: gpu-operator, imagePullSecrets: []}
validator: {repository: nvcr.io/nvidia, image: gpu-operator, imagePullSecrets: []}
nodeStatusExporter: {enabled: false, repository: nvcr.io/nvidia, image: gpu-operator, imagePullSecrets: []}
mig: {strategy: single}
nfd: {enabled: true}
driver:
  enabled: true
  kernelModuleType: auto
  usePrecompiled: false
  repository: nvcr.io/nvidia
  image: driver
  version: "580.105.08"
  imagePullSecrets: []
  manager: {repository: nvcr.io/nvidia/cloud-native, image: k8s-driver-manager, version: v0.9.1}
  repoConfig: {configMapName: ""}
  certConfig: {name: ""}
toolkit: {enabled: true, repository: nvcr.io/nvidia/k8s, image: container-toolkit, version: v1.18.1, imagePullSecrets: []}
devicePlugin:
  enabled: true
  repository: nvcr.io/nvidia
  image: k8s-device-plugin
  version: v0.18.1
  imagePullSecrets: []
  config: {create: false, name: "", default: "", data: {}}
gfd: {enabled: true, repository: nvcr.io/nvidia, image: k8s-device-plugin, version: v0.18.1, imagePullSecrets: []}
migManager: {enabled: true, repository: nvcr.io/nvidia/cloud-native, image: k8s-mig-manager, version: v0.13.0, imagePullSecrets: [], config: {name: ""}}
dcgm: {enabled: false, repository: nvcr.io/nvidia/cloud-native, image: dcgm, version: x, imagePullSecrets: []}
dcgmExporter: {enabled: true, repository: nvcr.io/nvidia/k8s, image: dcgm-exporter, version: x, imagePullSecrets: [], serviceMonitor: {enabled: false}}
sandboxDevicePlugin: {enabled: false, repository: nvcr.io/nvidia, image: kubevirt-gpu-device-plugin, version: x, imagePullSecrets: []}
node-feature-discovery: {enableNodeFeatureApi: true}
)";
    c.values = YAML::Load(c.values_text);
    gb::recipes::Chart nfd;
    nfd.name = "node-feature-discovery";
    nfd.values = YAML::Load("image: {repository: registry.k8s.io/nfd/node-feature-discovery, pullPolicy: IfNotPresent}\nimagePullSecrets: []\n");
    c.subcharts.push_back(nfd);
    return c;
  }();
  return c;
}

// The network-operator chart for a lock with a network section: no values, so
// such a lock reaches the network files' key checks.
const gb::recipes::Chart& network_chart() {
  static const gb::recipes::Chart c = [] {
    gb::recipes::Chart c;
    c.name = "network-operator";
    c.version = "26.4.1";
    c.values = YAML::Load("{}");
    return c;
  }();
  return c;
}

bool ends_with(const std::string& s, std::string_view tail) { return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto lock = gb::recipes::parse_lock(std::string(gbfuzz::text(data, size)), "fuzz/lock.json");
  if (!lock) return 0;
  gb::kit::KitOptions options;
  options.registry = gb::kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();
  options.network_chart = &network_chart();
  options.package_repo_url = "https://repo.site/gpubundle/";
  auto kit = gb::kit::make_kit(*lock, chart(), options);
  if (!kit) return 0;

  std::set<std::string> listed;
  for (const auto& f : kit->files) {
    // A relative path of plain components, listed once.
    fs::path p(f.path);
    if (f.path.empty() || p.is_absolute() || !listed.insert(f.path).second) std::abort();
    for (const auto& part : p)
      if (part == ".." || part == "." || part.empty()) std::abort();
    for (unsigned char c : f.content)
      if (c < 0x20 && c != '\n' && c != '\t') std::abort();
    try {
      if (ends_with(f.path, ".yaml")) YAML::LoadAll(f.content);
      if (ends_with(f.path, ".json") && !nlohmann::json::accept(f.content)) std::abort();
    } catch (const YAML::Exception&) {
      std::abort();
    }
  }

  // Written below a fresh scratch folder: nothing may land beside the kit.
  const fs::path top = gbfuzz::memory_scratch_dir() / "lock_kit";
  const fs::path dir = top / "kit";
  std::error_code ec;
  fs::remove_all(top, ec);
  fs::create_directories(top);
  if (!gb::kit::write_kit(*kit, dir)) return 0;
  std::set<std::string> written;
  for (auto it = fs::recursive_directory_iterator(top); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory()) continue;
    fs::path rel = it->path().lexically_relative(dir);
    if (rel.empty() || *rel.begin() == "..") std::abort();
    written.insert(rel.string());
  }
  if (written != listed) std::abort();
  return 0;
}
