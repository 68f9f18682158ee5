// The Network Operator's closure (recipes/network.hpp) and kit files
// (kit/kit_network.cpp), on the real releases in ../shared/upstream/network-operator.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "fixtures.hpp"
#include "kit/kit.hpp"
#include "recipes/chart_source.hpp"
#include "recipes/network.hpp"
#include "recipes/resolver.hpp"

using namespace gb;
using namespace gb::recipes;
using gbtest::TempDir;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> k_network_tags = {"v26.1.2", "v26.4.1"};
const std::string k_gpu_tag = "v26.7.0";

fs::path network_dir(const std::string& tag) { return fs::path(GB_SHARED_DIR) / "upstream" / "network-operator" / tag; }

bool have_network_upstream() {
  if (fs::is_directory(network_dir(k_network_tags[0])) && !gbtest::upstream_dir().empty()) return true;
  WARN("skipped: " << (fs::path(GB_SHARED_DIR) / "upstream").string() << "/{network-operator,gpu-operator} is absent (tests read it in place)");
  SUCCEED();
  return false;
}

// The DOCA driver builds on the node unless the network text says precompiled:
// the site package repository then carries what it installs.
const std::string k_sources =
    "packages:\n  sources:\n  - {name: ubuntu, type: apt, url: 'https://archive.ubuntu.com/ubuntu', suites: [jammy], "
    "components: [main], keyring: ubuntu.gpg}\n";

std::string recipe_text(const std::string& tag, const std::string& network, const std::string& top = k_sources) {
  return "apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: fabric}\noperator: {version: " + k_gpu_tag +
         "}\ntarget: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, kernels: [5.15.0-122-generic, 5.15.0-125-generic], "
         "platforms: [linux/amd64, linux/arm64]}\n"
         "driver: {version: \"580.95.05\"}\ndestination: {registry: \"registry.site:5000\", prefix: gpu}\n" + top +
         "network:\n  version: " + tag + "\n  releaseFile: " + (network_dir(tag) / "hack/release.yaml").string() + "\n" + network;
}

struct Resolved {
  Recipe recipe;
  Chart net_chart;
  Chart gpu_chart;
  Lock lock;
};

Resolved resolve_both(const TempDir& dir, const std::string& tag, const std::string& network, const std::string& top = k_sources) {
  auto tgz = gbtest::pack_chart(gbtest::shared_chart(k_gpu_tag), dir / "gpu-operator.tgz");
  auto recipe = parse_recipe(recipe_text(tag, network, top), dir / "fabric.yaml").value_or_throw();
  Chart gpu = load_chart(tgz).value_or_throw();
  Chart net = load_chart(network_dir(tag)).value_or_throw();
  Lock lock = resolve(recipe, gpu, gb::recipes::Catalog::builtin()).value_or_throw();
  resolve_network(recipe, net, gbtest::slurp(network_dir(tag) / "hack/release.yaml"), gb::recipes::Catalog::builtin(), lock).value_or_throw();
  return {std::move(recipe), std::move(net), std::move(gpu), std::move(lock)};
}

const LockImage* find_image(const Lock& lock, const std::string& source) {
  for (const auto& i : lock.images)
    if (i.source == source) return &i;
  return nullptr;
}

std::string network_error_of(const std::string& text) {
  TempDir dir;
  auto r = parse_recipe(text, dir / "fabric.yaml");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("network: both shared releases resolve from their chart and release.yaml, operands as asked", "[network]") {
  if (!have_network_upstream()) return;
  const std::vector<std::string> on = {"ofedDriver", "rdmaSharedDevicePlugin", "multus", "cniPlugins", "ipoib", "nvIpam",
                                       "sriovNetworkOperator"};
  std::string operands = "  operands: [";
  for (size_t i = 0; i < on.size(); ++i) operands += (i ? ", " : "") + on[i];
  operands += "]\n";
  for (const auto& tag : k_network_tags) {
    CAPTURE(tag);
    TempDir dir;
    auto r = resolve_both(dir, tag, operands);
    REQUIRE(r.lock.network);
    CHECK(r.lock.network->version == tag);
    CHECK(r.lock.network->chart.name == "network-operator");
    CHECK(r.lock.network->operands == on);

    YAML::Node release = YAML::LoadFile((network_dir(tag) / "hack/release.yaml").string());
    auto release_ref = [&](const std::string& key, const std::string& tag_text) {
      return release[key]["repository"].as<std::string>() + "/" + release[key]["image"].as<std::string>() + ":" + tag_text;
    };
    // Every NicClusterPolicy operand: present with its exact version when asked, absent otherwise.
    for (const auto& op : gb::recipes::Catalog::builtin().network_operands()) {
      bool wanted = std::find(on.begin(), on.end(), op.name) != on.end();
      for (const auto& pi : op.policy) {
        if (op.name == "ofedDriver") continue;  // per OS and arch, below
        std::string ref = release_ref(pi.release, release[pi.release]["version"].as<std::string>());
        CAPTURE(op.name, ref);
        // (The SR-IOV network operator subchart names the SR-IOV device plugin image too.)
        const LockImage* img = find_image(r.lock, ref);
        bool listed = img && std::find(img->components.begin(), img->components.end(), "network:" + pi.path) != img->components.end();
        CHECK(listed == wanted);
        if (wanted) {
          REQUIRE(img);
          CHECK(img->destination == Reference::parse(ref).value().rehomed("registry.site:5000", "gpu").str());
        }
      }
    }
    // DOCA driver: <version>-<os>-<arch>, one per platform, platform-specific.
    const std::string doca = release["Mofed"]["version"].as<std::string>();
    CHECK(r.lock.network->doca_version == doca);
    CHECK_FALSE(r.lock.network->doca_precompiled);
    for (const std::string arch : {"amd64", "arm64"}) {
      const LockImage* img = find_image(r.lock, release_ref("Mofed", doca + "-ubuntu22.04-" + arch));
      REQUIRE(img);
      CHECK(img->platforms == std::vector<std::string>{"linux/" + arch});
      CHECK(img->components == std::vector<std::string>{"network:ofedDriver"});
    }
    // Chart images: the operator (Helm's appVersion), its DOCA init container,
    // the enabled SR-IOV subchart's images as the parent values pin them, no NFD.
    CHECK(find_image(r.lock, r.net_chart.values["operator"]["repository"].as<std::string>() + "/" +
                                 r.net_chart.values["operator"]["image"].as<std::string>() + ":" + r.net_chart.app_version));
    const auto& init = r.net_chart.values["operator"]["ofedDriver"]["initContainer"];
    CHECK(find_image(r.lock, init["repository"].as<std::string>() + "/" + init["image"].as<std::string>() + ":" +
                                 init["version"].as<std::string>()));
    for (const auto& kv : r.net_chart.values["sriov-network-operator"]["images"]) {
      CAPTURE(kv.first.as<std::string>());
      CHECK(find_image(r.lock, Reference::parse(kv.second.as<std::string>()).value().str()));
    }
    const auto& nfd = r.net_chart.values["node-feature-discovery"]["image"];
    CHECK_FALSE(find_image(r.lock, nfd["repository"].as<std::string>() + ":" + nfd["tag"].as<std::string>()));
    // The GPU Operator's closure is still all there.
    CHECK(std::any_of(r.lock.images.begin(), r.lock.images.end(), [](const LockImage& i) {
      return std::find(i.components.begin(), i.components.end(), "driver") != i.components.end();
    }));
  }
}

TEST_CASE("network: one NFD, the GPU Operator's; precompiled DOCA drivers are per kernel, OS and arch", "[network]") {
  if (!have_network_upstream()) return;
  for (const auto& tag : k_network_tags) {
    CAPTURE(tag);
    TempDir dir;
    auto r = resolve_both(dir, tag, "  ofedDriver: {precompiled: true}\n");
    // The default operands name nfd, but the GPU Operator runs its NFD: the network chart's is left out, and said.
    auto without_nfd = gb::recipes::Catalog::builtin().network_default_operands();
    without_nfd.erase(std::find(without_nfd.begin(), without_nfd.end(), "nfd"));
    CHECK(r.lock.network->operands == without_nfd);
    CHECK(std::any_of(r.lock.warnings.begin(), r.lock.warnings.end(),
                      [](const std::string& w) { return w.find("network.operands: nfd left out") != std::string::npos; }));
    const auto& nfd = r.net_chart.values["node-feature-discovery"]["image"];
    const std::string nfd_ref = nfd["repository"].as<std::string>() + ":" + nfd["tag"].as<std::string>();
    CHECK_FALSE(find_image(r.lock, nfd_ref));
    kit::KitOptions ko;
    ko.registry = kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();
    ko.network_chart = &r.net_chart;
    kit::Kit kit = kit::make_kit(r.lock, r.gpu_chart, ko).value_or_throw();
    YAML::Node values = YAML::Load(kit.find("network-operator-values.yaml")->content);
    CHECK_FALSE(values["nfd"]["enabled"].as<bool>());
    CHECK(values["nfd"]["deployNodeFeatureRules"].as<bool>());
    // Without the GPU Operator's NFD, the network chart's is carried and deployed.
    TempDir dir2;
    auto own = resolve_both(dir2, tag, "  ofedDriver: {precompiled: true}\n",
                            k_sources + "components: {node-feature-discovery: false}\n");
    CHECK(own.lock.network->operands == gb::recipes::Catalog::builtin().network_default_operands());
    const LockImage* nfd_image = find_image(own.lock, nfd_ref);
    REQUIRE(nfd_image);
    CHECK(nfd_image->components == std::vector<std::string>{"network:node-feature-discovery.image"});
    YAML::Node release = YAML::LoadFile((network_dir(tag) / "hack/release.yaml").string());
    const std::string base = release["Mofed"]["repository"].as<std::string>() + "/" + release["Mofed"]["image"].as<std::string>();
    const std::string doca = release["Mofed"]["version"].as<std::string>();
    size_t doca_images = 0;
    for (const auto& i : r.lock.images)
      if (i.components == std::vector<std::string>{"network:ofedDriver"}) ++doca_images;
    CHECK(doca_images == r.recipe.kernels.size() * r.recipe.platforms.size());
    for (const auto& k : r.recipe.kernels)
      for (const std::string arch : {"amd64", "arm64"}) {
        CAPTURE(k, arch);
        CHECK(find_image(r.lock, base + ":" + doca + "-" + k + "-ubuntu22.04-" + arch));
      }
    // Not asked for: the SR-IOV device plugin.
    CHECK_FALSE(find_image(r.lock, release["SriovDevicePlugin"]["repository"].as<std::string>() + "/" +
                                       release["SriovDevicePlugin"]["image"].as<std::string>() + ":" +
                                       release["SriovDevicePlugin"]["version"].as<std::string>()));
  }
}

TEST_CASE("network: a release file of another release, a chart of another version are refused", "[network]") {
  if (!have_network_upstream()) return;
  TempDir dir;
  auto recipe = parse_recipe(recipe_text("v26.4.1", ""), dir / "fabric.yaml").value_or_throw();
  Chart gpu = load_chart(gbtest::pack_chart(gbtest::shared_chart(k_gpu_tag), dir / "g.tgz")).value_or_throw();
  Lock lock = resolve(recipe, gpu, gb::recipes::Catalog::builtin()).value_or_throw();
  Chart net_old = load_chart(network_dir("v26.1.2")).value_or_throw();
  auto r = resolve_network(recipe, net_old, gbtest::slurp(network_dir("v26.1.2") / "hack/release.yaml"), gb::recipes::Catalog::builtin(), lock);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("network.version v26.4.1 does not match the network-operator chart's version 26.1.2") != std::string::npos);
  CHECK(r.error().message.find("network.releaseFile") != std::string::npos);
  CHECK(r.error().message.find("is the image list of v26.1.2") != std::string::npos);

  // An operand whose subchart the chart lacks is refused, not carried as nothing.
  auto with_maintenance = parse_recipe(recipe_text("v26.4.1", "  operands: [maintenanceOperator]\n"), dir / "fabric.yaml").value_or_throw();
  Chart net = load_chart(network_dir("v26.4.1")).value_or_throw();
  net.dependencies.erase(std::remove_if(net.dependencies.begin(), net.dependencies.end(),
                                        [](const ChartDependency& d) { return d.condition == "maintenanceOperator.enabled"; }),
                         net.dependencies.end());
  Lock lock2 = resolve(with_maintenance, gpu, gb::recipes::Catalog::builtin()).value_or_throw();
  auto r2 = resolve_network(with_maintenance, net, gbtest::slurp(network_dir("v26.4.1") / "hack/release.yaml"), gb::recipes::Catalog::builtin(), lock2);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().message.find("network.operands: maintenanceOperator (NVIDIA maintenance operator (subchart)): chart network-operator "
                                "26.4.1 has no subchart switched by maintenanceOperator.enabled") != std::string::npos);
}

TEST_CASE("network: bad recipe fields are one line naming the field", "[network]") {
  const std::string head = "apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v26.7.0}\ntarget: {gpus: [L4], os: ubuntu22.04}\n";
  auto e = network_error_of(head + "network: {version: v26.4.1, operands: [ofedDriver, rdma]}\n");
  CHECK(e.find("fabric.yaml:5: network.operands[1]: 'rdma' is not a Network Operator operand; known: ofedDriver, ") == 0);
  CHECK(e.find("rdmaSharedDevicePlugin") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
  CHECK(network_error_of(head + "network: {version: 26.4.1}\n").find("network.version: '26.4.1' is not a release tag") != std::string::npos);
  CHECK(network_error_of(head + "network: {operands: [multus]}\n").find("network.version: missing") != std::string::npos);
  CHECK(network_error_of(head + "network: {version: v26.4.1, operand: [multus]}\n").find("network.operand: unknown field (did you mean 'operands'?)") !=
        std::string::npos);
  CHECK(network_error_of(head + "network: {version: v26.4.1, operands: [multus, multus]}\n").find("network.operands[1]: 'multus' is listed twice") !=
        std::string::npos);
  CHECK(network_error_of(head + "network: {version: v26.4.1, ofedDriver: {precompiled: true}}\n")
            .find("network.ofedDriver.precompiled: precompiled DOCA drivers are one image per kernel") != std::string::npos);
  CHECK(network_error_of(head + "network: {version: v26.4.1, operands: [multus], ofedDriver: {precompiled: false}}\n")
            .find("network.ofedDriver: set, but network.operands does not list ofedDriver") != std::string::npos);
  CHECK(network_error_of(head + "network: {version: v26.4.1, releaseFile: \"http://x/release.yaml\"}\n").find("network.releaseFile:") !=
        std::string::npos);
  // The DOCA tag takes VERSION_ID as it is: rhel9.6, never rhel9.
  const std::string rhel = "apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v26.7.0}\ntarget: {gpus: [L4], os: rhel9}\n";
  CHECK(network_error_of(rhel + "network: {version: v26.4.1}\n").find("target.os: 'rhel9': the Network Operator tags DOCA driver images with "
                                                              "the nodes' os-release ID and VERSION_ID") != std::string::npos);
  CHECK(network_error_of(rhel + "network: {version: v26.4.1}\n").find("rhel9.6") != std::string::npos);
  // ibKubernetes: the site's GUID pool and UFM Secret, which the CRD requires.
  const std::string ib = "network:\n  version: v26.4.1\n  operands: [ibKubernetes]\n";
  CHECK(network_error_of(head + ib).find("network.ibKubernetes: missing: the ibKubernetes operand needs") != std::string::npos);
  const std::string pool = "  ibKubernetes: {pKeyGUIDPoolRangeStart: '02:00:00:00:00:00:00:00', pKeyGUIDPoolRangeEnd: ";
  CHECK(network_error_of(head + ib + pool + "'02:00:00:00:00:00:00', ufmSecret: ufm}\n")
            .find("network.ibKubernetes.pKeyGUIDPoolRangeEnd: '02:00:00:00:00:00:00' is not a GUID") != std::string::npos);
  CHECK(network_error_of(head + ib + "  ibKubernetes: {pKeyGUIDPoolRangeStart: '02:00:00:00:00:00:01:00', pKeyGUIDPoolRangeEnd: "
                              "'02:00:00:00:00:00:00:ff', ufmSecret: ufm}\n")
            .find("02:00:00:00:00:00:00:ff is below pKeyGUIDPoolRangeStart") != std::string::npos);
  CHECK(network_error_of(head + ib + pool + "'02:FF:FF:FF:FF:FF:FF:FF', ufmSecret: 'UFM $(x)'}\n")
            .find("network.ibKubernetes.ufmSecret: 'UFM $(x)' is not a Kubernetes secret name") != std::string::npos);
  CHECK(network_error_of(head + "network:\n  version: v26.4.1\n  operands: [multus]\n" + pool + "'02:FF:FF:FF:FF:FF:FF:FF', ufmSecret: u}\n")
            .find("network.ibKubernetes: set, but network.operands does not list ibKubernetes") != std::string::npos);
  TempDir dir;
  auto with_ib = parse_recipe(head + ib + pool + "'02:FF:FF:FF:FF:FF:FF:FF', ufmSecret: ufm}\n", dir / "r.yaml").value_or_throw();
  REQUIRE(with_ib.network->ib_kubernetes);
  CHECK(with_ib.network->ib_kubernetes->pkey_guid_pool_end == "02:FF:FF:FF:FF:FF:FF:FF");
  auto ok = parse_recipe(head + "network: {version: v26.4.1}\n", dir / "r.yaml").value_or_throw();
  REQUIRE(ok.network);
  CHECK(ok.network->release_file == "https://raw.githubusercontent.com/Mellanox/network-operator/v26.4.1/hack/release.yaml");
  CHECK(ok.network->chart == "https://helm.ngc.nvidia.com/nvidia");
  CHECK_FALSE(parse_recipe(head, dir / "r.yaml").value_or_throw().network);
}

TEST_CASE("network: the lock's network section round-trips and every field is checked", "[network]") {
  Lock l;
  l.network = LockNetwork{"v26.4.1", {"network-operator", "26.4.1", "v26.4.1", "https://helm.ngc.nvidia.com/nvidia", std::string(64, 'a')},
                          "https://example/release.yaml", std::string(64, 'b'), {"ofedDriver", "nfd"}, "doca3.4.1-26.04-1.1.0.0-1", true, "", "", ""};
  LockImage img;
  img.components = {"network:ofedDriver"};
  img.source = "nvcr.io/nvidia/mellanox/doca-driver:doca3.4.1-26.04-1.1.0.0-1-ubuntu22.04-amd64";
  img.platforms = {"linux/amd64"};
  l.images.push_back(img);
  std::string text = lock_to_json(l);
  auto back = parse_lock(text, "l.json").value_or_throw();
  REQUIRE(back.network);
  CHECK(back.network->operands == l.network->operands);
  CHECK(back.network->doca_version == l.network->doca_version);
  CHECK(back.network->doca_precompiled);
  CHECK(back.network->chart.sha256 == l.network->chart.sha256);
  CHECK(lock_to_json(back) == text);

  auto refused = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    auto r = parse_lock(t, "l.json");
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(refused("\"version\": \"v26.4.1\"", "\"version\": \"26.4.1;rm\"").find("network.version") != std::string::npos);
  CHECK(refused("\"nfd\"", "\"nope\"").find("network.operands[1]: 'nope' is not a Network Operator operand") != std::string::npos);
  CHECK(refused("\"doca3.4.1-26.04-1.1.0.0-1\"", "\"doca 3\"").find("network.docaDriver.version") != std::string::npos);
  CHECK(refused(std::string(64, 'b'), "xyz").find("network.releaseSha256") != std::string::npos);
  // ibKubernetes reaches nic-cluster-policy.yaml: held to the recipe's rules.
  Lock ib = l;
  ib.network->operands.push_back("ibKubernetes");
  ib.network->ib_pkey_guid_pool_start = "02:00:00:00:00:00:00:00";
  ib.network->ib_pkey_guid_pool_end = "02:00:00:00:00:00:ff:ff";
  ib.network->ib_ufm_secret = "ufm";
  const std::string ib_text = lock_to_json(ib);
  CHECK(parse_lock(ib_text, "l.json").value_or_throw().network->ib_ufm_secret == "ufm");
  auto ib_refused = [&](const std::string& from, const std::string& to) {
    std::string t = ib_text;
    t.replace(t.find(from), from.size(), to);
    auto r = parse_lock(t, "l.json");
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(ib_refused("\"ufm\"", "\"ufm\\nhostPID: true\"").find("network.ibKubernetes.ufmSecret") != std::string::npos);
  CHECK(ib_refused("\"02:00:00:00:00:00:ff:ff\"", "\"02:00\"").find("network.ibKubernetes.pKeyGUIDPoolRangeEnd") != std::string::npos);
  CHECK(parse_lock(lock_to_json(l), "l.json").ok());

  // A lock written before the network section reads as one without it.
  Lock old;
  auto plain = parse_lock(lock_to_json(old), "old.json").value_or_throw();
  CHECK_FALSE(plain.network);
  CHECK(lock_to_json(old).find("\"network\"") == std::string::npos);
}

TEST_CASE("network kit: NicClusterPolicy and chart values name only the site registry and keys the chart has", "[network][kit]") {
  if (!have_network_upstream()) return;
  for (const auto& tag : k_network_tags) {
    CAPTURE(tag);
    TempDir dir;
    // The GPU Operator's NFD off, so that the network chart's is deployed.
    auto r = resolve_both(dir, tag, "  operands: [ofedDriver, rdmaSharedDevicePlugin, sriovDevicePlugin, multus, cniPlugins, nvIpam, nfd, sriovNetworkOperator, maintenanceOperator]\n",
                          k_sources + "components: {node-feature-discovery: false}\n");
    kit::KitOptions o;
    o.registry = kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();
    auto refused = kit::make_kit(r.lock, r.gpu_chart, o);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("network-operator chart") != std::string::npos);

    o.network_chart = &r.net_chart;
    kit::Kit k = kit::make_kit(r.lock, r.gpu_chart, o).value_or_throw();
    const kit::KitFile* policy = k.find("nic-cluster-policy.yaml");
    const kit::KitFile* values = k.find("network-operator-values.yaml");
    REQUIRE(policy);
    REQUIRE(values);

    YAML::Node ncp = YAML::Load(policy->content);
    CHECK(ncp["kind"].as<std::string>() == "NicClusterPolicy");
    // Every operand image at the site, with the version release.yaml names.
    size_t images = 0;
    std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& n, const std::string& path) {
      if (!n.IsMap()) return;
      if (n["repository"]) {
        ++images;
        CAPTURE(path);
        CHECK(n["repository"].as<std::string>().rfind("registry.site:5000/gpu/", 0) == 0);
        CHECK_FALSE(n["version"].as<std::string>().empty());
      }
      for (const auto& kv : n) walk(kv.second, path + "." + kv.first.as<std::string>());
    };
    walk(ncp["spec"], "spec");
    CHECK(images == 6);  // ofedDriver, rdma, sriov device plugin, multus, cni plugins, nv-ipam
    CHECK(ncp["spec"]["ofedDriver"]["version"].as<std::string>() == r.lock.network->doca_version);
    CHECK(ncp["spec"]["ofedDriver"]["upgradePolicy"]["maxParallelUpgrades"].as<int>() == 1);
    CHECK(ncp["spec"]["ofedDriver"]["upgradePolicy"]["drain"]["enable"].as<bool>());
    CHECK(ncp["spec"]["secondaryNetwork"]["multus"]["image"].as<std::string>() == "multus-cni");

    // The chart values: every key is one the chart (or its subchart) has, and
    // no image reference leaves the site registry.
    YAML::Node v = YAML::Load(values->content);
    for (const auto& p : kit::leaf_paths(v)) {
      CAPTURE(p);
      CHECK(kit::chart_has_key(r.net_chart, p));
    }
    CHECK(v["operator"]["repository"].as<std::string>() == "registry.site:5000/gpu/nvidia/cloud-native");
    CHECK(v["node-feature-discovery"]["image"]["repository"].as<std::string>().rfind("registry.site:5000/gpu/", 0) == 0);
    CHECK(v["maintenance-operator-chart"]["operator"]["image"]["repository"].as<std::string>().rfind("registry.site:5000/gpu/", 0) == 0);
    for (const auto& kv : v["sriov-network-operator"]["images"])
      CHECK(kv.second.as<std::string>().rfind("registry.site:5000/gpu/", 0) == 0);
    CHECK(v["sriovNetworkOperator"]["enabled"].as<bool>());
    CHECK(v["nfd"]["enabled"].as<bool>());
    // The GPU Operator's values carry nothing of the network chart.
    CHECK(k.find("values.yaml")->content.find("network") == std::string::npos);

    // network.sh: every value single-quoted, the chart file the one `overrides` writes
    // beside it, no template token left (tests/integration/network_cluster.sh runs it).
    const kit::KitFile* script = k.find("network.sh");
    REQUIRE(script);
    CHECK(script->mode == 0755);
    const std::string& sh = script->content;
    CHECK(sh.find("\nchart_file='" + chart_file_name("network-operator", r.lock.network->chart.version) + "'\n") != std::string::npos);
    CHECK(sh.find("\nversion='" + tag + "'\n") != std::string::npos);
    CHECK(sh.find("\nrelease='network-operator'\n") != std::string::npos);
    CHECK(sh.find("\npolicy='nic-cluster-policy'\n") != std::string::npos);
    CHECK(sh.find("\npull_secret=''\n") != std::string::npos);
    CHECK(sh.find("\nregistry='registry.site:5000'\n") != std::string::npos);
    CHECK(sh.find("namespace=\"${GPUBUNDLE_NETWORK_NAMESPACE:-nvidia-network-operator}\"") != std::string::npos);
    CHECK(sh.find("GPUBUNDLE_NETWORK_NAMESPACE $(printf '%q' \"$namespace\") is not a namespace name") != std::string::npos);
    CHECK_FALSE(std::regex_search(sh, std::regex("@[A-Z_]+@")));
  }
}

TEST_CASE("network kit: every NicClusterPolicy operand carries what the release's CRD requires, and only fields it names", "[network][kit]") {
  if (!have_network_upstream()) return;
  std::string operands = "  operands: [";
  for (const auto& op : gb::recipes::Catalog::builtin().network_operands())
    if (!op.policy.empty()) operands += (operands.back() == '[' ? "" : ", ") + op.name;
  operands += "]\n  ibKubernetes: {pKeyGUIDPoolRangeStart: '0a:00:00:00:00:00:00:00', pKeyGUIDPoolRangeEnd: '0a:00:00:00:00:00:ff:ff', "
              "ufmSecret: site-ufm}\n";
  for (const auto& tag : k_network_tags) {
    CAPTURE(tag);
    TempDir dir;
    auto r = resolve_both(dir, tag, operands);
    kit::KitOptions o;
    o.registry = kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();
    o.network_chart = &r.net_chart;
    kit::Kit k = kit::make_kit(r.lock, r.gpu_chart, o).value_or_throw();
    YAML::Node spec = YAML::Load(k.find("nic-cluster-policy.yaml")->content)["spec"];
    YAML::Node crd = YAML::LoadFile((network_dir(tag) / "chart/crds/mellanox.com_nicclusterpolicies.yaml").string());
    YAML::Node schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    REQUIRE(schema["properties"]);
    // (ibKubernetes: its GUID pool and UFM Secret are required; kit-schemas checks the whole schema.)
    size_t objects = 0;
    std::function<void(const YAML::Node&, const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& v, const YAML::Node& s,
                                                                                              const std::string& path) {
      if (!v.IsMap()) return;
      ++objects;
      for (const auto& req : s["required"]) {
        CAPTURE(path, req.as<std::string>());
        CHECK(v[req.as<std::string>()]);
      }
      for (const auto& kv : v) {
        const std::string key = kv.first.as<std::string>();
        CAPTURE(path + "." + key);
        REQUIRE(s["properties"][key]);
        walk(kv.second, s["properties"][key], path + "." + key);
      }
    };
    walk(spec, schema, "spec");
    // The recipe's pool and Secret, not an example's.
    CHECK(spec["ibKubernetes"]["ufmSecret"].as<std::string>() == "site-ufm");
    CHECK(spec["ibKubernetes"]["pKeyGUIDPoolRangeStart"].as<std::string>() == "0a:00:00:00:00:00:00:00");
    CHECK(spec["ibKubernetes"]["pKeyGUIDPoolRangeEnd"].as<std::string>() == "0a:00:00:00:00:00:ff:ff");
    CHECK(objects > 12);
  }
}

TEST_CASE("network kit: pull secrets, RDMA with proprietary modules, the DOCA build's package sources, registries the operator cannot list",
          "[network][kit]") {
  if (!have_network_upstream()) return;
  const std::string tag = "v26.4.1";
  TempDir dir;
  auto make = [&](const Resolved& r, kit::KitOptions o) { o.network_chart = &r.net_chart; return kit::make_kit(r.lock, r.gpu_chart, o); };
  kit::KitOptions o;
  o.registry = kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();

  // The DOCA driver builds on the nodes: the site package repository serves it.
  auto r = resolve_both(dir, tag, "  operands: [ofedDriver, rdmaSharedDevicePlugin, sriovNetworkOperator, maintenanceOperator]\n",
                        k_sources + "pullSecret: site-pull\n");
  r.lock.package_repo = LockPackageRepo{"apt", std::string(40, 'A'),
                                        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ0test\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n"};
  LockImage repo;
  repo.source = "localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab";
  repo.components = {"packageRepo"};
  repo.platforms = {"linux/amd64"};
  repo.built = BuiltKind::PackageRepo;
  repo.digest = "sha256:" + std::string(64, 'c');
  r.lock.images.push_back(repo);
  auto k = make(r, o);
  INFO((k ? std::string() : k.error().message));
  REQUIRE(k.ok());
  YAML::Node ofed = YAML::Load(k->find("nic-cluster-policy.yaml")->content)["spec"]["ofedDriver"];
  CHECK(ofed["repoConfig"]["name"].as<std::string>() == "gpubundle-repo-config");
  CHECK_FALSE(ofed["certConfig"]);
  REQUIRE(k->find("network-repo/gpubundle.list"));
  CHECK(k->find("network-repo/gpubundle.list")->content.find("http://gpubundle-package-repo.gpu-operator.svc.cluster.local:8080/") !=
        std::string::npos);
  CHECK(k->find("network-repo/gpubundle-repo.asc"));
  const std::string sh = k->find("network.sh")->content;
  CHECK(sh.find("\nrepo_service_host='gpubundle-package-repo.gpu-operator.svc.cluster.local'\n") != std::string::npos);
  CHECK(sh.find("jsonpath='{.spec.clusterIP}'") != std::string::npos);

  // The pull secret reaches every subchart, each in its own shape, and network.sh copies it over.
  YAML::Node values = YAML::Load(k->find("network-operator-values.yaml")->content);
  CHECK(values["imagePullSecrets"][0].as<std::string>() == "site-pull");
  CHECK(values["sriov-network-operator"]["imagePullSecrets"][0].as<std::string>() == "site-pull");
  CHECK(values["maintenance-operator-chart"]["imagePullSecrets"][0]["name"].as<std::string>() == "site-pull");
  CHECK_FALSE(values["node-feature-discovery"]["imagePullSecrets"]);  // the GPU Operator's NFD runs; this one is off
  CHECK(sh.find("create secret generic \"$pull_secret\" --type=kubernetes.io/dockerconfigjson") != std::string::npos);
  CHECK(sh.find("\nnfd_crd='nodefeaturerules.nfd.k8s-sigs.io'\n") != std::string::npos);

  // H100 with the recipe's open modules: DMA-BUF, no driver.rdma.
  YAML::Node gpu = YAML::Load(k->find("values.yaml")->content);
  CHECK_FALSE((gpu["driver"]["rdma"]["enabled"].IsDefined() && gpu["driver"]["rdma"]["enabled"].as<bool>()));
  // Proprietary modules: only nvidia-peermem carries GPUDirect RDMA, against the DOCA driver the operator runs.
  Lock proprietary = r.lock;
  proprietary.driver.kernel_module_type = "proprietary";
  auto kp = kit::make_kit(proprietary, r.gpu_chart, [&] { auto x = o; x.network_chart = &r.net_chart; return x; }());
  REQUIRE(kp.ok());
  YAML::Node pv = YAML::Load(kp->find("values.yaml")->content);
  CHECK(pv["driver"]["rdma"]["enabled"].as<bool>());
  CHECK_FALSE(pv["driver"]["rdma"]["useHostMofed"].as<bool>());
  TempDir dir3;
  auto host_doca = resolve_both(dir3, tag, "  operands: [rdmaSharedDevicePlugin]\n");  // the host's DOCA driver
  host_doca.lock.driver.kernel_module_type = "proprietary";
  auto kh = make(host_doca, o);
  INFO((kh ? std::string() : kh.error().message));
  REQUIRE(kh.ok());
  CHECK(YAML::Load(kh->find("values.yaml")->content)["driver"]["rdma"]["useHostMofed"].as<bool>());

  // forcePrecompiled: the operator lists tags with its image's CAs and https, except on private addresses.
  TempDir dir2;
  auto pre = resolve_both(dir2, tag, "  ofedDriver: {precompiled: true}\n");
  REQUIRE(make(pre, o).ok());
  auto ca = o;
  ca.registry_ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto refused = make(pre, ca);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::StartsWith("network.ofedDriver.precompiled: the Network Operator keeps a precompiled DOCA driver"));
  CHECK_THAT(refused.error().message, Catch::Contains("not the site CA the kit was given"));
  for (const char* http : {"http://registry.site:5000/gpu", "http://172.32.0.1:5000", "http://8.8.8.8"}) {
    CAPTURE(http);
    auto h = o;
    h.registry = kit::SiteRegistry::parse(http).value_or_throw();
    auto hr = make(pre, h);
    REQUIRE_FALSE(hr.ok());
    CHECK_THAT(hr.error().message, Catch::Contains("plain HTTP only to localhost and private IP addresses"));
  }
  for (const char* http : {"http://127.0.0.1:5000/gpu", "http://10.1.2.3:5000", "http://172.16.0.9", "http://192.168.1.5:80",
                           "http://localhost:5000", "http://reg.localhost"}) {
    CAPTURE(http);
    auto h = o;
    h.registry = kit::SiteRegistry::parse(http).value_or_throw();
    auto hr = make(pre, h);
    INFO((hr ? std::string() : hr.error().message));
    CHECK(hr.ok());
  }
}

TEST_CASE("network lock: the NCCL acceptance is held to the network section as the recipe is", "[network][acceptance]") {
  Lock l;
  l.network = LockNetwork{"v26.4.1", {"network-operator", "26.4.1", "v26.4.1", "https://helm.ngc.nvidia.com/nvidia", std::string(64, 'a')},
                          "https://example/release.yaml", std::string(64, 'b'), {"ofedDriver", "rdmaSharedDevicePlugin", "nfd"},
                          "doca3.4.1-26.04-1.1.0.0-1", false, "", "", ""};
  auto with_nccl = [&](const std::string& network, std::vector<std::string> operands, bool has_network = true) {
    Lock copy = l;
    copy.network->operands = std::move(operands);
    if (!has_network) copy.network.reset();
    copy.recipe_spec = R"({"acceptance": {"nccl": {"image": "ghcr.io/example/nccl-tests:2.19.6", "network": ")" + network + R"("}}})";
    return parse_lock(lock_to_json(copy), "l.json");
  };
  CHECK(with_nccl("roce-net", {"rdmaSharedDevicePlugin"}).ok());
  CHECK(with_nccl("nvidia-network-operator/roce-net", {"sriovDevicePlugin"}).ok());
  CHECK(with_nccl("", {"ofedDriver", "rdmaSharedDevicePlugin"}).ok());
  CHECK(with_nccl("", {}, false).ok());
  auto refusal = [](const Result<Lock>& r) { return r.ok() ? std::string() : r.error().message; };
  CHECK(refusal(with_nccl("Roce_Net", {"rdmaSharedDevicePlugin"})) ==
        "l.json: recipe.spec.acceptance.nccl.network: not a NetworkAttachmentDefinition name ([namespace/]name)");
  CHECK(refusal(with_nccl("a/b/c", {"rdmaSharedDevicePlugin"})).find("acceptance.nccl.network: not a NetworkAttachmentDefinition") !=
        std::string::npos);
  CHECK(refusal(with_nccl("roce-net", {}, false)) ==
        "l.json: recipe.spec.acceptance.nccl.network: 'roce-net' names a secondary network, but the lock has no network section");
  CHECK(refusal(with_nccl("", {"ofedDriver", "nfd"})) ==
        "l.json: recipe.spec.acceptance.nccl: with a network section the NCCL run tests the fabric, but network.operands has no RDMA "
        "device plugin (rdmaSharedDevicePlugin or sriovDevicePlugin)");
}

TEST_CASE("network kit: the NCCL workers ask for the RDMA resource the kit's NicClusterPolicy makes, with IPC_LOCK and the network",
          "[network][kit][acceptance]") {
  if (!have_network_upstream()) return;
  const std::string tag = k_network_tags.back();
  const std::string acceptance = "acceptance:\n  nccl:\n    image: ghcr.io/example/nccl-tests:2.19.6\n";
  struct Case {
    std::string operands, network, resource;
  };
  for (const Case& c : {Case{"[ofedDriver, rdmaSharedDevicePlugin, multus, cniPlugins, nvIpam]", "roce-net", "rdma/rdma_shared_device_a"},
                        Case{"[ofedDriver, sriovDevicePlugin, multus, cniPlugins]", "nvidia-network-operator/hostdev-net", "nvidia.com/hostdev"},
                        Case{"[ofedDriver, rdmaSharedDevicePlugin, sriovDevicePlugin]", "", "rdma/rdma_shared_device_a"}}) {
    CAPTURE(c.operands, c.network);
    TempDir dir;
    auto r = resolve_both(dir, tag, "  operands: " + c.operands + "\n" + acceptance + (c.network.empty() ? "" : "    network: " + c.network + "\n"));
    kit::KitOptions o;
    o.registry = kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();
    o.network_chart = &r.net_chart;
    kit::Kit k = kit::make_kit(r.lock, r.gpu_chart, o).value_or_throw();
    const kit::KitFile* job = k.find("acceptance/nccl-mpijob.yaml");
    REQUIRE(job);
    YAML::Node spec = YAML::Load(job->content)["spec"]["mpiReplicaSpecs"];
    YAML::Node worker = spec["Worker"]["template"];
    YAML::Node container = worker["spec"]["containers"][0];
    CHECK(container["resources"]["requests"][c.resource].as<int>() == 1);
    CHECK(container["resources"]["limits"][c.resource].as<int>() == 1);
    CHECK(container["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 8);
    CHECK(container["securityContext"]["capabilities"]["add"][0].as<std::string>() == "IPC_LOCK");
    if (c.network.empty()) CHECK_FALSE(worker["metadata"]["annotations"]);
    else CHECK(worker["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].as<std::string>() == c.network);
    // The launcher only runs mpirun: no device, no capability.
    YAML::Node launcher = spec["Launcher"]["template"]["spec"]["containers"][0];
    CHECK_FALSE(launcher["securityContext"]);
    CHECK(launcher["args"][0].as<std::string>() == "--hostfile");
    CHECK(launcher["args"][1].as<std::string>() == "/etc/mpi/hostfile");
    CHECK(k.find("acceptance/nccl-allreduce.sh")->content.find("\nfabric=1\n") != std::string::npos);

    // The resource is the one the kit's own NicClusterPolicy configures.
    YAML::Node ncp = YAML::Load(k.find("nic-cluster-policy.yaml")->content)["spec"];
    if (c.resource == "rdma/rdma_shared_device_a") {
      auto config = nlohmann::json::parse(ncp["rdmaSharedDevicePlugin"]["config"].as<std::string>());
      CHECK(config["configList"][0]["resourceName"] == "rdma_shared_device_a");  // the plugin's prefix is rdma/
    } else {
      auto config = nlohmann::json::parse(ncp["sriovDevicePlugin"]["config"].as<std::string>());
      CHECK(config["resourceList"][0]["resourcePrefix"].get<std::string>() + "/" + config["resourceList"][0]["resourceName"].get<std::string>() ==
            c.resource);
    }
  }
  // A network section with no RDMA device plugin: refused when the recipe is read.
  TempDir dir;
  auto refused = parse_recipe(recipe_text(tag, "  operands: [ofedDriver, nfd]\n" + acceptance), dir / "fabric.yaml");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("acceptance.nccl: with a network section the NCCL run tests the fabric, but network.operands has no RDMA "
                                     "device plugin") != std::string::npos);
}

TEST_CASE("network kit: without a network section the NCCL job asks for no RDMA device", "[network][kit][acceptance]") {
  if (!have_network_upstream()) return;
  TempDir dir;
  auto tgz = gbtest::pack_chart(gbtest::shared_chart(k_gpu_tag), dir / "gpu-operator.tgz");
  auto recipe = parse_recipe("apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: plain}\noperator: {version: " + k_gpu_tag +
                                 "}\ntarget: {gpus: [H100-SXM5-80GB], os: ubuntu22.04}\ndriver: {version: \"580.95.05\"}\n"
                                 "acceptance:\n  nccl:\n    image: ghcr.io/example/nccl-tests:2.19.6\n",
                             dir / "plain.yaml")
                    .value_or_throw();
  Chart gpu = load_chart(tgz).value_or_throw();
  Lock lock = resolve(recipe, gpu, gb::recipes::Catalog::builtin()).value_or_throw();
  kit::KitOptions o;
  o.registry = kit::SiteRegistry::parse("registry.site:5000/gpu").value_or_throw();
  kit::Kit k = kit::make_kit(lock, gpu, o).value_or_throw();
  YAML::Node worker = YAML::Load(k.find("acceptance/nccl-mpijob.yaml")->content)["spec"]["mpiReplicaSpecs"]["Worker"]["template"];
  YAML::Node container = worker["spec"]["containers"][0];
  CHECK_FALSE(worker["metadata"]["annotations"]);
  CHECK_FALSE(container["securityContext"]);
  CHECK_FALSE(container["resources"]["requests"]);
  CHECK(container["resources"]["limits"].size() == 1);
  CHECK(k.find("acceptance/nccl-allreduce.sh")->content.find("\nfabric=0\n") != std::string::npos);
}
