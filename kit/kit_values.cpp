// values.yaml: the Helm overrides that point every image of the lock at the
// site registry, plus the driver/toolkit/MIG/sharing settings of the recipe.
// The rules (which keys take digests, which take tags) are in
// docs/install-kit.md; the chart facts behind them in gpu-operator-facts.md
// §1.3, §1.4 and §3.

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "kit/kit.hpp"
#include "kit/kit_detail.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "recipes/network.hpp"
#include "recipes/reference.hpp"

namespace gb::kit {

using json = nlohmann::json;

const std::vector<KeyException>& values_key_exceptions() {
  static const std::vector<KeyException> all = {
      {"operator.version",
       "commented out in values.yaml; templates/_helpers.tpl reads .Values.operator.version | default .Chart.AppVersion, "
       "and Chart.yaml at the git tags carries a placeholder appVersion"},
      {"validator.version", "commented out in values.yaml; clusterpolicy.yaml reads .Values.validator.version | default .Chart.AppVersion"},
      {"nodeStatusExporter.version",
       "commented out in values.yaml; clusterpolicy.yaml reads .Values.nodeStatusExporter.version | default .Chart.AppVersion"},
      {"node-feature-discovery.image.tag",
       "commented out in the NFD subchart values before v0.19; its templates read .Values.image.tag | default .Chart.AppVersion"},
      {"dcgm.imagePullSecrets", "absent from values.yaml, rendered by clusterpolicy.yaml when set"},
      {"dcgmExporter.imagePullSecrets", "absent from values.yaml, rendered by clusterpolicy.yaml when set"},
  };
  return all;
}

bool detail::is_key_exception(std::string_view path) {
  for (const auto& e : values_key_exceptions())
    if (path == e.path) return true;
  return false;
}

namespace {

constexpr const char* k_nfd = "node-feature-discovery";

void collect_leaves(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      collect_leaves(kv.second, prefix.empty() ? key : prefix + "." + key, out);
    }
    if (node.size() == 0 && !prefix.empty()) out.push_back(prefix);
    return;
  }
  if (!prefix.empty()) out.push_back(prefix);
}

// The node at parts[from..] of a values tree, every step a map key; else an undefined node.
YAML::Node node_at(const YAML::Node& root, const std::vector<std::string>& parts, size_t from = 0) {
  YAML::Node cur;
  cur.reset(root);  // rebinds the handle; const lookups below never insert
  for (size_t i = from; i < parts.size(); ++i) {
    const YAML::Node& view = cur;
    if (!view.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node next = view[parts[i]];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(next);
  }
  return cur;
}

// A subchart's own values first (node-feature-discovery.*, sriov-network-operator.*), then the chart's.
YAML::Node chart_node(const recipes::Chart& chart, const std::vector<std::string>& parts) {
  if (const recipes::Chart* sub = chart.subchart(parts[0]))
    if (YAML::Node n = node_at(sub->values, parts, 1); n.IsDefined()) return n;
  return node_at(chart.values, parts);
}

// Components whose tag the operator extends with -<osTag> unless it is a digest.
bool takes_os_suffix(const std::string& component) {
  return component == "gds" || component == "gdrcopy" || component == "vgpuManager";
}

// Images Helm renders as repository/image:version, where a digest would make
// "image:sha256:..." (the catalog's helmRenderedFrom: the "*.fullimage"
// helpers behind the operator Deployment, its CRD hooks and its
// DRIVER_MANAGER_IMAGE and VALIDATOR_IMAGE env).
bool helm_rendered(const std::string& component, const std::string& operator_version) {
  const recipes::ComponentInfo* info = recipes::Catalog::builtin().component(component);
  return info && !info->helm_rendered_from.empty() && !operator_version.empty() &&
         compare_versions(operator_version, info->helm_rendered_from) >= 0;
}

// A values subtree as JSON, plain scalars typed the way YAML reads them.
json json_of(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = json_of(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& item : n) a.push_back(json_of(item));
    return a;
  }
  if (!n.IsScalar()) return nullptr;
  if (n.Tag() != "!") {  // unquoted
    bool b = false;
    if (YAML::convert<bool>::decode(n, b)) return b;
    long long i = 0;
    if (YAML::convert<long long>::decode(n, i)) return i;
  }
  return n.as<std::string>();
}

// Image references inside a list of a component's values (the catalog's
// images, e.g. kataManager config.runtimeClasses.*.artifacts.url): Helm lists
// are replaced whole, so the kit writes the chart's list back with every
// reference pointed at the site. The consumer pulls the reference as written,
// so it keeps the tag.
struct ListImages {
  std::string list_path;                     // kataManager.config.runtimeClasses
  std::vector<std::string> item_path;        // artifacts, url
  std::map<std::string, std::string> moved;  // source -> site reference
};

// The list an image component such as "kataManager.url" comes from, or
// nullopt when the component is a plain repository/image/version key.
std::optional<ListImages> list_images_of(const std::string& component) {
  auto dot = component.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const recipes::ComponentInfo* info = recipes::Catalog::builtin().component(component.substr(0, dot));
  if (!info) return std::nullopt;
  for (const auto& pattern : info->images) {
    auto parts = split(pattern, '.');
    auto star = std::find(parts.begin(), parts.end(), "*");
    if (parts.back() != component.substr(dot + 1) || star == parts.end()) continue;
    ListImages l;
    l.list_path = component.substr(0, dot);
    for (auto it = parts.begin(); it != star; ++it) l.list_path += "." + *it;
    l.item_path.assign(star + 1, parts.end());
    return l;
  }
  return std::nullopt;
}

}  // namespace

void detail::emit_node(YAML::Emitter& out, const json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      out << YAML::Key << k << YAML::Value;
      emit_node(out, v);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    if (j.empty()) out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const auto& v : j) emit_node(out, v);
    out << YAML::EndSeq;
  } else if (j.is_boolean()) {
    out << j.get<bool>();
  } else if (j.is_number_integer()) {
    out << j.get<long long>();
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else {
    out << YAML::Null;
  }
}

std::vector<std::string> leaf_paths(const YAML::Node& values) {
  std::vector<std::string> out;
  collect_leaves(values, "", out);
  return out;
}

bool chart_has_key(const recipes::Chart& chart, std::string_view path) {
  auto parts = split(path, '.');
  return !parts.empty() && chart_node(chart, parts).IsDefined();
}

// A key below one whose chart default is an empty map ({}: labels,
// annotations, selectors) is the user's to name.
bool under_free_form_map(const recipes::Chart& chart, const std::string& path) {
  auto parts = split(path, '.');
  for (size_t n = parts.size() - 1; n >= 1; --n) {
    YAML::Node at = chart_node(chart, std::vector<std::string>(parts.begin(), parts.begin() + static_cast<long>(n)));
    if (!at.IsDefined()) continue;
    return at.IsMap() && at.size() == 0;
  }
  return false;
}

std::vector<std::string> unknown_keys(const YAML::Node& values, const recipes::Chart& chart) {
  std::vector<std::string> out;
  for (const auto& p : leaf_paths(values))
    if (!chart_has_key(chart, p) && !detail::is_key_exception(p) && !under_free_form_map(chart, p)) out.push_back(p);
  return out;
}

Result<std::string> make_values_yaml(const recipes::Lock& lock, const recipes::Chart& chart, const KitOptions& options) {
  auto placements = place_images(lock, options.registry, options.layout);
  if (!placements) return placements.error();
  auto recipe = kit_recipe(lock);
  if (!recipe) return recipe.error();

  std::vector<std::string> problems;
  detail::Overrides v(chart, problems);
  const bool secret = !recipe->pull_secret.empty();
  std::map<std::string, ListImages> lists;  // by list path

  for (const auto& p : *placements) {
    const std::string& tag = p.source.tag;
    const std::string& digest = p.image->at_site();
    for (const auto& c : p.image->components) {
      if (c == "extraImages") continue;  // mirrored for workloads (verify.sh); no values key
      if (c == recipes::k_node_overlay_component) continue;  // for node image pipelines; no values key
      if (c == recipes::k_tool_image_component) continue;    // what build Jobs run; no values key
      if (c == recipes::k_package_repo_component || c == recipes::k_package_server_component) continue;  // package-repo.yaml; no values key
      if (recipes::is_network_component(c)) continue;  // network-operator-values.yaml, nic-cluster-policy.yaml
      if (c == recipes::k_nccl_tests_component || c == recipes::k_mpi_operator_component) continue;  // acceptance/; no values key
      if (auto l = list_images_of(c); l && chart_has_key(chart, l->list_path)) {
        lists.emplace(l->list_path, *l).first->second.moved[p.source.str()] = p.destination.pinned();
        continue;
      }
      if (c == k_nfd) {
        // The subchart's repository is the full image path; tag only.
        v.set(std::string(k_nfd) + ".image.repository", p.destination.name());
        if (tag.empty()) {
          problems.push_back("image " + p.image->source + ": the NFD chart needs a tag, not only a digest");
          continue;
        }
        v.set(std::string(k_nfd) + ".image.tag", tag);
        if (secret) v.set(std::string(k_nfd) + ".imagePullSecrets", json::array({{{"name", recipe->pull_secret}}}));
        continue;
      }
      if (!chart_has_key(chart, c + ".repository")) {
        problems.push_back("lock component " + c + " (image " + p.image->source + ") has no " + c + ".repository in chart " +
                           v.chart_label() + "; was the lock resolved against another chart?");
        continue;
      }
      v.set(c + ".repository", detail::repository_of(p.destination));
      v.set(c + ".image", detail::image_of(p.destination));

      std::string version;
      if (c == "driver") {
        // The operator composes the tag (<version>-<osTag>, precompiled
        // <branch>-<kernel>-<osTag>); a digest is refused with precompiled.
        version = lock.driver.use_precompiled ? lock.driver.branch : lock.driver.version;
      } else if (helm_rendered(c, lock.operator_version)) {
        version = tag;
      } else if (!digest.empty()) {
        version = digest;
      } else if (takes_os_suffix(c) && !lock.os_tag.empty() && ends_with(tag, "-" + lock.os_tag)) {
        version = tag.substr(0, tag.size() - lock.os_tag.size() - 1);
      } else {
        version = tag;
      }
      if (version.empty()) {
        problems.push_back("image " + p.image->source + ": no tag or digest to put in " + c + ".version");
        continue;
      }
      v.set(c + ".version", version);
      if (secret) v.set_if_present(c + ".imagePullSecrets", json::array({recipe->pull_secret}));
    }
  }

  for (const auto& [path, l] : lists) {
    json items = json_of(node_at(chart.values, split(path, '.')));
    std::set<std::string> placed;
    for (auto& item : items) {
      json* ref = &item;
      for (const auto& part : l.item_path) ref = ref && ref->is_object() && ref->contains(part) ? &(*ref)[part] : nullptr;
      if (!ref || !ref->is_string()) continue;
      auto parsed = recipes::Reference::parse(ref->get<std::string>());
      if (auto it = parsed ? l.moved.find(parsed->str()) : l.moved.end(); it != l.moved.end()) {
        *ref = it->second;
        placed.insert(it->first);
      }
    }
    for (const auto& [source, site] : l.moved)
      if (!placed.count(source))
        problems.push_back("image " + source + " is not in " + path + " of chart " + v.chart_label() +
                         "; was the lock resolved against another chart?");
    v.set(path, std::move(items));
  }

  // The Chart.yaml appVersion trap: the three images that default to it get
  // the release explicitly when no image above set them.
  for (const char* key : {"operator", "validator", "nodeStatusExporter"}) {
    std::string path = std::string(key) + ".version";
    if (!v.has(path) && !lock.operator_version.empty()) v.set(path, lock.operator_version);
  }

  // Driver.
  const bool host_driver = lock.driver.mode == "host";
  v.set("driver.enabled", !host_driver);
  if (!host_driver) {
    v.set("driver.usePrecompiled", lock.driver.use_precompiled);
    if (!v.has("driver.version")) {
      std::string version = lock.driver.use_precompiled ? lock.driver.branch : lock.driver.version;
      if (!version.empty()) v.set("driver.version", version);
    }
    if (lock.package_repo) {
      v.set("driver.repoConfig.configMapName", k_package_repo_config_map);
      if (!options.package_repo_ca.empty()) v.set("driver.certConfig.name", k_package_repo_ca_config_map);
    }
    // The operator's upgrade controller rolls a driver change one node at a
    // time (cordon, GPU pod deletion, drain as fallback, driver restart,
    // operator-validator, uncordon); upgrade.sh watches it. Only the keys this
    // chart has.
    for (const auto& [key, value] : std::initializer_list<std::pair<const char*, json>>{
             {"autoUpgrade", true}, {"maxParallelUpgrades", 1}, {"maxUnavailable", 1}, {"drain.enable", true},
             {"drain.force", false}, {"drain.deleteEmptyDir", false}, {"drain.timeoutSeconds", 300}})
      v.set_if_present(std::string("driver.upgradePolicy.") + key, value);
    const std::string& kmt = lock.driver.kernel_module_type;
    if (chart_has_key(chart, "driver.kernelModuleType")) {
      if (!kmt.empty()) v.set("driver.kernelModuleType", kmt);
    } else if (chart_has_key(chart, "driver.useOpenKernelModules")) {
      // v24.x and older: a boolean; auto keeps the chart's default (false).
      v.set("driver.useOpenKernelModules", kmt == "open");
    }
    // GPUDirect RDMA over the kit's fabric: DMA-BUF, NVIDIA's recommended path,
    // needs no switch but needs the open modules. With the proprietary ones only
    // the legacy nvidia-peermem works: driver.rdma starts it, against the host's
    // DOCA driver when the Network Operator does not run one.
    if (lock.network && !recipes::rdma_resource(lock.network->operands).empty() && kmt != "open" && kmt != "auto") {
      v.set_if_present("driver.rdma.enabled", true);
      const auto& ops = lock.network->operands;
      v.set_if_present("driver.rdma.useHostMofed", std::find(ops.begin(), ops.end(), "ofedDriver") == ops.end());
    }
  }

  v.set("toolkit.enabled", recipe->toolkit_mode != "host");

  // VM workloads: the operator deploys the sandbox operands only with
  // sandboxWorkloads.enabled, on nodes labelled for a VM workload or, without
  // a label, per defaultWorkload. The kit's mode is KubeVirt (the default).
  std::vector<std::string> vm_workloads;
  for (const auto& w : lock.workloads)
    if (w != "container") vm_workloads.push_back(w);
  if (!vm_workloads.empty()) {
    bool container = vm_workloads.size() < lock.workloads.size();
    v.set("sandboxWorkloads.enabled", true);
    v.set("sandboxWorkloads.defaultWorkload", container ? "container" : vm_workloads.front());
    v.set_if_present("sandboxWorkloads.mode", "kubevirt");
  }
  // The operator deploys an operand whose own switch is on (isStateEnabled in
  // controllers/state_manager.go), and an absent switch means on for several
  // (driver, dcgm, migManager, ...). So every operand the lock does not carry
  // is switched off here, whatever the chart's default: nothing the operator
  // deploys pulls from upstream. The recipe's own components entry still wins.
  {
    std::set<std::string> carried;
    for (const auto& img : lock.images) carried.insert(img.components.begin(), img.components.end());
    for (const auto& [key, info] : recipes::Catalog::builtin().components()) {
      if (key.find('.') != std::string::npos || !info.enabled_by.empty() || key == "driver" || key == "toolkit") continue;
      if (carried.count(key) || recipe->components.count(key)) continue;
      if (chart_has_key(chart, key + ".enabled")) v.set(key + ".enabled", false);
    }
  }
  if (!recipe->mig_strategy.empty()) v.set("mig.strategy", recipe->mig_strategy);
  if (recipe->time_slicing_replicas > 0) {
    v.set("devicePlugin.config.name", k_time_slicing_configmap);
    v.set("devicePlugin.config.default", k_time_slicing_key);
  }

  bool dra = false;
  for (const auto& [key, comp] : recipe->components) {
    std::string base = (key == k_nfd || key == "nfd") ? "nfd" : key;
    if (comp.has_enabled) {
      // A component without a switch of its own follows another values key
      // (draDriver: gpuCluster.deployCR).
      const recipes::ComponentInfo* info = recipes::Catalog::builtin().component(base);
      std::string gate = info && !info->enabled_by.empty() && !chart_has_key(chart, base + ".enabled") ? info->enabled_by : "";
      if (!gate.empty() && chart_has_key(chart, gate)) {
        v.set(gate, comp.enabled);
        dra = dra || (base == "draDriver" && comp.enabled);
      } else if (!chart_has_key(chart, base + ".enabled")) {
        problems.push_back("recipe component " + key + ": chart " + v.chart_label() + " has no " + base + ".enabled");
      } else if (!(base == "driver" || base == "toolkit")) {  // set above from the driver/toolkit mode
        v.set(base + ".enabled", comp.enabled);
      }
    }
    if (comp.has_service_monitor) v.set(base + ".serviceMonitor.enabled", comp.service_monitor);
  }
  // The operator's DCGM exporter ServiceMonitor carries the labels the site's
  // Prometheus selects on; without them kube-prometheus-stack never scrapes it.
  if (chart_has_key(chart, "dcgmExporter.serviceMonitor.additionalLabels"))
    v.set("dcgmExporter.serviceMonitor.additionalLabels", nlohmann::json(recipe->monitoring.prometheus));

  if (dra) {
    // The GPUCluster CR replaces the ClusterPolicy (templates/validations.yaml
    // refuses both) and takes the driver from an NVIDIADriver CR.
    v.set("clusterPolicy.deployCR", false);
    if (!host_driver) v.set("driver.nvidiaDriverCRD.enabled", true);
  }

  if (!problems.empty()) return input_error(join(problems, "\n"));
  return detail::values_text(v, chart, "values.yaml",
                             detail::yaml_header(lock, options,
                                                 "Helm values for chart " + lock.chart.name + " " + lock.chart.version +
                                                     ": every image from the site registry " + options.registry.str() + "."));
}

Result<std::string> detail::values_text(const Overrides& v, const recipes::Chart& chart, const std::string& file, std::string header) {
  YAML::Emitter out;
  emit_node(out, v.root());
  std::string text = std::move(header) + out.c_str() + "\n";
  // Belt and braces: what was emitted parses and holds only known keys.
  try {
    auto unknown = unknown_keys(YAML::Load(text), chart);
    if (!unknown.empty()) return op_error(file + " would carry keys chart " + v.chart_label() + " lacks: " + join(unknown, ", "));
  } catch (const YAML::Exception& e) {
    return op_error(file + " does not parse back: " + e.what());
  }
  return text;
}

}  // namespace gb::kit
