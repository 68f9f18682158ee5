#include "tests/unit/kit_fixture.hpp"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include "signing/digest.hpp"

namespace gb::kit_test {

// A tiny chart: just the values keys the fixture lock needs.
recipes::Chart fixture_chart() {
  recipes::Chart c;
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
dcgmExporter: {enabled: true, repository: nvcr.io/nvidia/k8s, image: dcgm-exporter, version: x, serviceMonitor: {enabled: false}}
node-feature-discovery: {enableNodeFeatureApi: true}
)";
  c.values = YAML::Load(c.values_text);
  recipes::Chart nfd;
  nfd.name = "node-feature-discovery";
  nfd.values = YAML::Load("image: {repository: registry.k8s.io/nfd/node-feature-discovery, pullPolicy: IfNotPresent}\nimagePullSecrets: []\n");
  c.subcharts.push_back(nfd);
  return c;
}

recipes::LockImage image(std::vector<std::string> components, std::string source, bool digest) {
  recipes::LockImage i;
  i.components = std::move(components);
  i.source = std::move(source);
  i.platforms = {"linux/amd64"};
  if (digest) i.digest = signing::sha256_digest(i.source);
  return i;
}

recipes::Lock fixture_lock() {
  recipes::Lock l;
  l.generator = "gpubundle test";
  l.recipe_name = "site-a";
  l.recipe_sha256 = std::string(64, 'a');
  l.operator_version = "v25.10.1";
  l.chart = {"gpu-operator", "v25.10.1", "main-latest", "https://helm.ngc.nvidia.com/nvidia", ""};
  l.gpus = {"H100-SXM5-80GB"};
  l.os = "ubuntu22.04";
  l.os_tag = "ubuntu22.04";
  l.platforms = {"linux/amd64"};
  l.workloads = {"container"};
  l.driver = {"conventional", "580.105.08", "580", "open", false};
  l.recipe_spec = R"({"components":{"dcgmExporter":{"enabled":true,"serviceMonitor":true}},
    "extraImages":["nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"],
    "mig":{"config":"all-1g.10gb","strategy":"mixed"},"pullSecret":"site-pull",
    "sharing":{"timeSlicing":{"renameByDefault":true,"replicas":4}},"toolkit":{"mode":"container"}})";
  l.images = {
      image({"driver.manager"}, "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.9.1"),
      image({"extraImages"}, "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"),
      image({"driver"}, "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04"),
      image({"validator", "operator"}, "nvcr.io/nvidia/gpu-operator:v25.10.1"),
      image({"devicePlugin"}, "nvcr.io/nvidia/k8s-device-plugin:v0.18.1"),
      image({"toolkit"}, "nvcr.io/nvidia/k8s/container-toolkit:v1.18.1"),
      image({"dcgmExporter"}, "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.0-distroless"),
      image({"node-feature-discovery"}, "registry.k8s.io/nfd/node-feature-discovery:v0.18.2"),
  };
  return l;
}

kit::KitOptions options(const std::string& registry, kit::Layout layout) {
  kit::KitOptions o;
  o.registry = kit::SiteRegistry::parse(registry).value_or_throw();
  o.layout = layout;
  return o;
}

const std::string& file(const kit::Kit& k, const std::string& path) {
  const kit::KitFile* f = k.find(path);
  INFO(path);
  REQUIRE(f != nullptr);
  return f->content;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace gb::kit_test
