// The NVIDIA Network Operator's part of the kit (a lock with a network
// section, recipes/network.hpp): network-operator-values.yaml for its chart
// and nic-cluster-policy.yaml, both naming only the site registry.

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "kit/kit.hpp"
#include "kit/kit_detail.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "recipes/network.hpp"

namespace gb::kit::detail {

using json = nlohmann::json;

namespace {

// "host/a/b" for destination host/a/b/name: the repository field of the
// {repository, image} shape.
std::string repository_of(const Reference& d) {
  auto slash = d.repository.rfind('/');
  return d.registry + (slash == std::string::npos ? "" : "/" + d.repository.substr(0, slash));
}

std::string image_of(const Reference& d) {
  auto slash = d.repository.rfind('/');
  return slash == std::string::npos ? d.repository : d.repository.substr(slash + 1);
}

// The parts after "network:" of a placement's components: an image may be
// both an operand's and a subchart's (the SR-IOV device plugin).
std::vector<std::string> network_keys(const Placement& p) {
  std::vector<std::string> out;
  for (const auto& c : p.image->components)
    if (is_network_component(c)) out.push_back(c.substr(k_network_component_prefix.size()));
  return out;
}

bool has_network_key(const Placement& p, const std::string& key) {
  auto keys = network_keys(p);
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

void set_path(json& root, const std::string& path, json value) {
  json* node = &root;
  for (const auto& part : split(path, '.')) node = &(*node)[part];
  *node = std::move(value);
}

}  // namespace

Result<std::string> network_values_yaml(const Lock& lock, const Chart& chart, const std::vector<Placement>& placements,
                                        const KitRecipe& recipe, const KitOptions& options) {
  const LockNetwork& net = *lock.network;
  const Catalog& catalog = Catalog::builtin();
  std::vector<std::string> warnings;
  auto images = network_chart_images(chart, net.operands, catalog, warnings);
  std::vector<std::string> problems;
  Overrides v(chart, problems);
  std::set<std::string> policy_paths;  // NicClusterPolicy images: nic-cluster-policy.yaml
  for (const auto& o : catalog.network_operands())
    for (const auto& pi : o.policy) policy_paths.insert(pi.path);
  using Shape = NetworkChartImage::Shape;
  for (const auto& p : placements) {
    for (const auto& key : network_keys(p)) {
      if (policy_paths.count(key)) continue;  // nic-cluster-policy.yaml
      auto it = std::find_if(images.begin(), images.end(), [&](const NetworkChartImage& i) { return i.path == key; });
      if (it == images.end()) {
        problems.push_back("lock component network:" + key + " (image " + p.image->source + ") is no image of chart " +
                           v.chart_label() + "; was the lock resolved against another chart?");
        continue;
      }
      const Reference& d = p.destination;
      switch (it->shape) {
        case Shape::RepositoryImage:
        case Shape::RepositoryName:
          v.set(key + ".repository", repository_of(d));
          v.set(key + (it->shape == Shape::RepositoryImage ? ".image" : ".name"), image_of(d));
          break;
        case Shape::FullRepository: v.set(key + ".repository", d.name()); break;
        case Shape::String: v.set(key, d.pinned()); continue;
      }
      // Without a tag key the chart renders its appVersion, which is the source's tag already.
      if (!it->tag_key.empty()) {
        if (d.tag.empty()) problems.push_back("image " + p.image->source + ": the chart takes a tag at " + key + "." + it->tag_key);
        else v.set(key + "." + it->tag_key, d.tag);
      }
    }
  }

  // The subcharts the recipe's operands switch, on or off.
  for (const auto& o : catalog.network_operands())
    if (!o.chart_switch.empty())
      v.set_if_present(o.chart_switch, std::find(net.operands.begin(), net.operands.end(), o.name) != net.operands.end());
  if (!recipe.pull_secret.empty()) v.set_if_present("imagePullSecrets", json::array({recipe.pull_secret}));
  if (!problems.empty()) return input_error(join(problems, "\n"));

  YAML::Emitter out;
  emit_node(out, v.root());
  std::string text = yaml_header(lock, options, "Helm values for chart " + net.chart.name + " " + net.chart.version +
                                                    " (NVIDIA Network Operator " + net.version +
                                                    "): every image from the site registry " + options.registry.str() + ".");
  text += out.c_str();
  text += "\n";
  try {
    auto unknown = unknown_keys(YAML::Load(text), chart);
    if (!unknown.empty())
      return op_error("network-operator-values.yaml would carry keys chart " + v.chart_label() + " lacks: " + join(unknown, ", "));
  } catch (const YAML::Exception& e) {
    return op_error(std::string("network-operator-values.yaml does not parse back: ") + e.what());
  }
  return text;
}

Result<std::string> nic_cluster_policy_yaml(const Lock& lock, const std::vector<Placement>& placements, const KitRecipe& recipe,
                                            const KitOptions& options) {
  const LockNetwork& net = *lock.network;
  const Catalog& catalog = Catalog::builtin();
  json spec = json::object();
  std::vector<std::string> problems;
  for (const auto& name : net.operands) {
    const NetworkOperand* op = catalog.network_operand(name);
    if (!op) continue;
    for (const auto& pi : op->policy) {  // none for a chart switch: network-operator-values.yaml
      auto p = std::find_if(placements.begin(), placements.end(), [&](const Placement& q) { return has_network_key(q, pi.path); });
      if (p == placements.end()) {
        problems.push_back("network operand " + name + ": the lock has no image of component network:" + pi.path);
        continue;
      }
      const Reference& d = p->destination;
      json image = {{"repository", repository_of(d)}, {"image", image_of(d)}};
      if (name == "ofedDriver") {
        // The operator appends -<os>-<arch> (precompiled -<kernel>-<os>-<arch>) itself.
        image["version"] = net.doca_version;
        if (net.doca_precompiled) image["forcePrecompiled"] = true;
        // One node at a time, drained first (docs/install-kit.md).
        image["upgradePolicy"] = {{"autoUpgrade", true},
                                  {"maxParallelUpgrades", 1},
                                  {"drain", {{"enable", true}, {"force", true}, {"deleteEmptyDir", true}, {"timeoutSeconds", 300}}}};
      } else {
        image["version"] = d.tag.empty() ? d.digest : d.tag;
      }
      if (!recipe.pull_secret.empty()) image["imagePullSecrets"] = json::array({recipe.pull_secret});
      if (name == "rdmaSharedDevicePlugin")
        image["config"] = R"({"configList": [{"resourceName": "rdma_shared_device_a", "rdmaHcaMax": 63, "selectors": {"vendors": ["15b3"]}}]})";
      if (name == "sriovDevicePlugin")
        image["config"] = R"({"resourceList": [{"resourcePrefix": "nvidia.com", "resourceName": "hostdev", "selectors": {"vendors": ["15b3"], "isRdma": true}}]})";
      if (name == "nvIpam") image["enableWebhook"] = false;
      if (name == "ibKubernetes") {
        // The CRD requires these (the API server refuses the policy without them): the
        // release's full example CR's GUID pool, and the Secret with the UFM credentials
        // the site makes (docs/install-kit.md).
        image["pKeyGUIDPoolRangeStart"] = "02:00:00:00:00:00:00:00";
        image["pKeyGUIDPoolRangeEnd"] = "02:FF:FF:FF:FF:FF:FF:FF";
        image["ufmSecret"] = "ufm-secret";
      }
      set_path(spec, pi.path, std::move(image));
    }
  }
  if (!problems.empty()) return input_error(join(problems, "\n"));
  json policy = {{"apiVersion", "mellanox.com/v1alpha1"},
                 {"kind", "NicClusterPolicy"},
                 {"metadata", {{"name", "nic-cluster-policy"}}},
                 {"spec", spec}};
  std::string note = "NicClusterPolicy for NVIDIA Network Operator " + net.version + ": every operand image from the site registry " +
                     options.registry.str() +
                     ". The device plugin selectors (vendor 15b3, all Mellanox NICs) are a "
                     "start: narrow them to the site's NICs (deviceIDs, ifNames) before applying.";
  if (spec.contains("ibKubernetes"))
    note += " ibKubernetes reads the UFM credentials from the Secret ufm-secret, which the site makes in the operator's "
            "namespace, and hands out GUIDs from the pool 02:00:00:00:00:00:00:00-02:FF:FF:FF:FF:FF:FF:FF: change both to the site's.";
  YAML::Emitter out;
  emit_node(out, policy);
  std::string text = yaml_header(lock, options, note);
  text += out.c_str();
  text += "\n";
  return text;
}

}  // namespace gb::kit::detail
