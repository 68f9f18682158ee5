#include "recipes/resolver.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "recipes/reference.hpp"
#include "signing/digest.hpp"

namespace gb {

namespace {

struct Found {
  std::string key;  // values path: "driver.manager"
  YAML::Node node;  // the map holding repository/image/version
};

bool is_string(const YAML::Node& n) { return n && n.IsScalar(); }

// Every map below `node` with the repository/image shape, in document order.
void find_images(const YAML::Node& node, const std::string& path, const std::set<std::string>& skip,
                 std::vector<Found>& out) {
  if (!node.IsMap()) return;
  if (is_string(node["repository"]) && is_string(node["image"])) out.push_back({path, node});
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string key = it->first.as<std::string>();
    if (path.empty() && skip.count(key)) continue;
    if (it->second.IsMap()) find_images(it->second, path.empty() ? key : path + "." + key, skip, out);
  }
}

std::string parent_of(const std::string& key) {
  auto dot = key.rfind('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

// Values found at `pattern` ("config.runtimeClasses.*.artifacts.url") below node.
void collect(const YAML::Node& node, const std::vector<std::string>& parts, size_t i, std::vector<std::string>& out) {
  if (!node) return;
  if (i == parts.size()) {
    if (node.IsScalar() && !node.as<std::string>().empty()) out.push_back(node.as<std::string>());
    return;
  }
  if (parts[i] == "*") {
    if (node.IsSequence())
      for (const auto& item : node) collect(item, parts, i + 1, out);
  } else if (node.IsMap()) {
    collect(node[parts[i]], parts, i + 1, out);
  }
}

std::string major_of(const std::string& version) { return split(version, '.')[0]; }

class Resolver {
public:
  Resolver(const Recipe& r, const Chart& c, const Catalog& cat) : m_r(r), m_chart(c), m_cat(cat) {}

  Result<Lock> run() {
    operator_version();
    gpus();
    driver();
    components();
    compatibility();
    if (!m_errors.empty()) return input_error(join(m_errors, "\n"));
    return finish();
  }

private:
  void error(const std::string& field, const std::string& message) { m_errors.push_back(m_r.where(field) + message); }
  void warn(const std::string& message) { m_lock.warnings.push_back(message); }

  void operator_version() {
    std::string chart_version = m_chart.version;
    bool placeholder = is_placeholder_version(chart_version);
    m_version = m_r.operator_version;
    if (m_version.empty()) {
      if (placeholder) {
        error("operator.version", "operator.version is missing and chart " + m_chart.name + " carries the placeholder version " +
                                      chart_version + "; name the release, e.g. operator.version: v24.9.2");
        m_version = "v0.0.0";
      } else {
        m_version = chart_version[0] == 'v' ? chart_version : "v" + chart_version;
      }
    } else if (placeholder) {
      warn("chart " + m_chart.name + " carries placeholder version " + chart_version + " (packed from git); using " +
           m_version + " from the recipe for the operator, validator and node status exporter tags");
    } else if (compare_versions(chart_version, m_version) != 0) {
      error("operator.version", "operator.version " + m_version + " does not match the chart's version " + chart_version +
                                    " (" + m_chart.path.string() + ")");
    }
    if (m_chart.name != "gpu-operator") warn("chart is named '" + m_chart.name + "', not gpu-operator");
  }

  // Index in target.gpus of the first entry that named this GPU.
  size_t gpu_index(const GpuInfo* g) const {
    for (size_t i = 0; i < m_r.gpus.size(); ++i)
      if (m_cat.find_gpu(m_r.gpus[i]) == g) return i;
    return 0;
  }

  void gpus() {
    for (size_t i = 0; i < m_r.gpus.size(); ++i) {
      const GpuInfo* g = m_cat.find_gpu(m_r.gpus[i]);
      if (!g) {
        std::string where = "target.gpus[" + std::to_string(i) + "]";
        if (auto known = pci_ids_name(m_r.gpus[i]); !known.empty()) {
          error(where, "target.gpus: " + m_r.gpus[i] + " is " + known + " (pci.ids), which the catalog has no driver, "
                       "MIG or module facts for; add it to recipes/catalog/gpus.yaml or name a catalog GPU");
          continue;
        }
        std::vector<std::string> names;
        for (const auto& k : m_cat.gpus()) names.push_back(k.name);
        error(where, "target.gpus: unknown GPU '" + m_r.gpus[i] + "'; use a PCI id (10de:xxxx) or one of: " + join(names, ", "));
        continue;
      }
      if (std::find(m_gpus.begin(), m_gpus.end(), g) == m_gpus.end()) m_gpus.push_back(g);
    }
  }

  void driver() {
    std::string chart_default;
    if (auto v = at_path(m_chart.values, "driver.version"); is_string(v)) chart_default = v.as<std::string>();
    auto& d = m_lock.driver;
    d.mode = to_string(m_r.driver_mode);
    d.use_precompiled = m_r.driver_mode == DriverMode::Precompiled;
    m_digest_pinned = starts_with(m_r.driver_version, "sha256:");
    m_version_field = !m_r.driver_version.empty() ? "driver.version" : !m_r.driver_branch.empty() ? "driver.branch" : "driver";

    if (m_digest_pinned) {
      d.version = m_r.driver_version;
      d.branch = m_r.driver_branch;
      if (m_r.driver_mode == DriverMode::Precompiled)
        error("driver.version", "driver.version: a digest-pinned driver cannot be used with precompiled drivers "
                                "(the operator composes <branch>-<kernel>-<osTag> tags); give driver.branch instead");
      else
        warn("driver.version is a digest: the GPU compatibility checks cannot see its version");
      return;
    }
    if (!m_r.driver_version.empty()) {
      d.version = m_r.driver_version;
      d.branch = major_of(d.version);
    } else if (!m_r.driver_branch.empty()) {
      d.branch = m_r.driver_branch;
      if (m_r.driver_mode == DriverMode::Conventional) {
        if (major_of(chart_default) == d.branch) {
          d.version = chart_default;
        } else {
          auto known = m_cat.versions_in_branch(d.branch);
          if (known.empty()) {
            error("driver.branch", "driver.branch " + d.branch +
                                       ": the catalog knows no version in this branch; set driver.version for a conventional driver");
          } else {
            d.version = *std::max_element(known.begin(), known.end(),
                                          [](const auto& a, const auto& b) { return compare_versions(a, b) < 0; });
            warn("driver.branch " + d.branch + ": using " + d.version +
                 ", the newest version in the catalog; pin driver.version to choose another");
          }
        }
      }
    } else if (m_r.driver_mode != DriverMode::Host) {
      d.version = chart_default;
      d.branch = major_of(chart_default);
      m_version_field = "driver";
      if (chart_default.empty()) error("driver.version", "driver.version: the chart has no driver.version default; set one");
    }
    if (m_r.driver_mode == DriverMode::Precompiled && m_r.kernels.empty())
      error("target.kernels", "target.kernels: precompiled drivers need the kernel release (uname -r) of every GPU node");
    // The DOCA driver builds on each node by default, installing packages there
    // (apt-get update, the kernel's headers, gcc-N): at an air-gapped site only
    // the site package repository has them.
    if (doca_builds_on_node(m_r) && m_r.packages.sources.empty())
      error("network.ofedDriver", "network.ofedDriver: the DOCA driver builds on each node (network.ofedDriver.precompiled is off) and "
                                  "installs the kernel's headers and compiler there from package repositories, which an air-gapped "
                                  "site does not reach; add packages.sources (the site package repository then carries them) or set "
                                  "network.ofedDriver.precompiled: true");
    if (site_package_repo()) {
      if (m_r.kernels.empty())
        error("target.kernels", "target.kernels: a site package repository (packages.sources) needs the kernel release "
                                "(uname -r) of every GPU node, since the packages it carries are those kernels' own");
      const auto family = os_package_format(m_r.os);
      for (size_t i = 0; i < m_r.packages.sources.size(); ++i)
        if (m_r.packages.sources[i].format != family)
          error("packages.sources", "packages.sources[" + std::to_string(i) + "].type: " + to_string(m_r.packages.sources[i].format) +
                                        " source " + quote(m_r.packages.sources[i].name) + " cannot serve " + m_r.os +
                                        " nodes, whose driver container installs " + to_string(family) + " packages");
    }
  }

  // A conventional driver with package sources: the bundle carries a package
  // repository for the driver containers, served from an image built here.
  bool site_package_repo() const { return wants_site_packages(m_r); }

  bool workload_allows(const std::string& key) const {
    for (std::string k = key; !k.empty(); k = parent_of(k)) {
      if (const auto* info = m_cat.component(k)) {
        for (const auto& w : info->workloads)
          if (std::find(m_r.workloads.begin(), m_r.workloads.end(), w) != m_r.workloads.end()) return true;
        return false;
      }
    }
    return std::find(m_r.workloads.begin(), m_r.workloads.end(), "container") != m_r.workloads.end();
  }

  // Recipe override wins, then the nearest "enabled" in values, then the
  // catalog's gate, then on. Host-mode driver/toolkit are always off.
  bool enabled(const std::string& key, bool* explicitly = nullptr) const {
    if (explicitly) *explicitly = false;
    std::string top = split(key, '.')[0];
    if (m_r.driver_mode == DriverMode::Host && top == "driver") return false;
    if (m_r.toolkit_mode == ToolkitMode::Host && top == "toolkit") return false;
    for (std::string k = key; !k.empty(); k = parent_of(k)) {
      if (auto it = m_r.components.find(k); it != m_r.components.end() && it->second.enabled) {
        if (explicitly) *explicitly = true;
        return *it->second.enabled;
      }
      if (auto e = at_path(m_chart.values, k + ".enabled"); is_string(e)) {
        bool v = false;
        YAML::convert<bool>::decode(e, v);
        return v && workload_allows(key);
      }
    }
    for (std::string k = key; !k.empty(); k = parent_of(k)) {
      const auto* info = m_cat.component(k);
      if (info && !info->enabled_by.empty()) {
        // Another component's switch ("dcgmExporter.enabled") follows the recipe too.
        if (ends_with(info->enabled_by, ".enabled")) return enabled(parent_of(info->enabled_by));
        auto e = at_path(m_chart.values, info->enabled_by);
        bool v = false;
        if (is_string(e)) YAML::convert<bool>::decode(e, v);
        return v;
      }
    }
    return workload_allows(key);
  }

  // The nearest catalog entry at or above a values key.
  const ComponentInfo* info_of(const std::string& key) const {
    for (std::string k = key; !k.empty(); k = parent_of(k))
      if (const auto* info = m_cat.component(k)) return info;
    return nullptr;
  }

  struct NeverRuns {
    std::string why;  // "" when the operator may run it
    std::string fix;
  };

  // Why the operator, as the kit deploys it, never runs the operand at `key`
  // (so its images stay out of the lock), from the catalog's facts.
  NeverRuns never_runs(const std::string& key) const {
    const ComponentInfo* info = info_of(key);
    if (!info) return {};
    const std::string title = "the " + info->title;
    const std::string drop = "remove components." + key;
    if (!info->removed_in.empty() && compare_versions(m_version, info->removed_in) >= 0)
      return {"GPU Operator " + m_version + " never deploys " + title + " (its state is always off from " + info->removed_in + " on)",
              drop + " or use an operator release before " + info->removed_in};
    if (m_dra && !info->gpu_cluster)
      return {"components.draDriver makes the chart deploy the GPUCluster (DRA) stack instead of the ClusterPolicy, and " +
                  title + " is a ClusterPolicy operand",
              drop + " or components.draDriver"};
    bool listed = std::any_of(info->workloads.begin(), info->workloads.end(), [&](const std::string& w) {
      return std::find(m_r.workloads.begin(), m_r.workloads.end(), w) != m_r.workloads.end();
    });
    if (!listed)
      return {"the operator runs " + title + " only for target.workloads " + join(info->workloads, " or ") +
                  ", which the recipe does not list",
              "add the workload to target.workloads or " + drop};
    if (!info->sandbox_mode.empty() && info->sandbox_mode != k_sandbox_mode && at_path(m_chart.values, "sandboxWorkloads.mode"))
      return {"GPU Operator " + m_version + " runs " + title + " only in sandboxWorkloads.mode " + info->sandbox_mode +
                  ", and the kit deploys VM workloads in " + k_sandbox_mode + " mode",
              drop};
    if (info->mig_capable && !m_gpus.empty() &&
        std::none_of(m_gpus.begin(), m_gpus.end(), [](const GpuInfo* g) { return !g->mig_profiles.empty(); })) {
      std::vector<std::string> names;
      for (const auto* g : m_gpus) names.push_back(g->name);
      return {"the operator runs " + title + " only on nodes with a MIG-capable GPU, and none of target.gpus (" + join(names, ", ") +
                  ") is one",
              drop + " or add the MIG-capable GPUs to target.gpus"};
    }
    if (info->openshift && split_os(m_r.os).first != "rhcos")
      return {"GPU Operator " + m_version + " uses " + title + " only on OpenShift (RHCOS nodes), and target.os is " + m_r.os,
              drop};
    return {};
  }

  void add(const std::string& component, const std::string& ref_text) {
    auto ref = Reference::parse(ref_text);
    if (!ref) {
      m_errors.push_back(m_chart.path.filename().string() + ": values " + component + ": " + ref.error().message);
      return;
    }
    std::string source = ref->str();
    auto& img = m_images[source];
    img.source = source;
    if (std::find(img.components.begin(), img.components.end(), component) == img.components.end())
      img.components.push_back(component);
  }

  void components() {
    std::set<std::string> subchart_names;
    for (const auto& dep : m_chart.dependencies) subchart_names.insert(dep.name);
    std::vector<Found> found;
    find_images(m_chart.values, "", subchart_names, found);

    std::set<std::string> known;
    for (const auto& f : found) known.insert(f.key);
    for (const auto& dep : m_chart.dependencies) known.insert(dep.name);
    std::set<std::string> listed = known;
    for (const auto& [key, o] : m_r.components) {
      bool ok = known.count(key) > 0;
      if (!ok && at_path(m_chart.values, key + ".enabled")) ok = true;
      if (ok) listed.insert(key);
      if (!ok)
        error("components." + key, "components." + key + ": chart " + m_chart.name + " " + m_version +
                                       " has no such component; remove components." + key +
                                       " or use a release that has it; its components: " + join({known.begin(), known.end()}, ", "));
    }

    // The DRA driver comes only with the GPUCluster CR (gpuCluster.deployCR),
    // which templates/validations.yaml allows only without the ClusterPolicy.
    m_dra = at_path(m_chart.values, "draDriver").IsDefined() && enabled("draDriver");
    // A component the recipe switches on that would never run: refused, as
    // the kit could not make the operator run it.
    for (const auto& [key, o] : m_r.components) {
      if (!o.enabled || !*o.enabled || !listed.count(key)) continue;
      if (auto n = never_runs(key); !n.why.empty())
        error("components." + key, "components." + key + " is on, but " + n.why + "; " + n.fix);
    }

    std::string os_tag = m_cat.os_tag(m_version, m_r.os);
    m_lock.os_tag = os_tag;
    for (const auto& f : found) {
      bool explicitly = false;
      if (!enabled(f.key, &explicitly)) continue;
      if (!never_runs(f.key).why.empty()) continue;
      std::string repo = f.node["repository"].as<std::string>();
      std::string image = f.node["image"].as<std::string>();
      std::string version = is_string(f.node["version"]) ? f.node["version"].as<std::string>() : "";
      if (repo.empty()) {
        warn("component " + f.key + " is enabled but the chart gives it no image repository (NVIDIA does not publish it); "
             "build and push it yourself: it is not in this lock");
        continue;
      }
      // The Chart.yaml trap: a missing version means .Chart.AppVersion, which is
      // a placeholder in charts packed from git. The release tag is right.
      if (version.empty()) version = m_version;
      std::string base = repo + "/" + image;
      const ComponentInfo* info = m_cat.component(f.key);
      bool os_suffix = info && info->os_suffix;
      if (f.key == "driver") {
        driver_images(base);
      } else if (starts_with(version, "sha256:")) {
        add(f.key, base + "@" + version);
      } else {
        add(f.key, base + ":" + version + (os_suffix ? "-" + os_tag : ""));
      }
      if (info)
        for (const auto& pattern : info->images) {
          std::vector<std::string> refs;
          collect(f.node, split(pattern, '.'), 0, refs);
          for (const auto& r : refs) add(f.key + "." + split(pattern, '.').back(), r);
        }
    }

    for (const auto& dep : m_chart.dependencies) subchart_images(dep);

    for (const auto& e : m_r.extra_images) add("extraImages", e);
    if (site_package_repo())
      add(k_package_server_component,
          m_r.packages.server_image.empty() ? k_default_package_server_image : m_r.packages.server_image);
    acceptance_images();
  }

  // The NCCL acceptance job runs these; the kit points its MPIJob at them.
  void acceptance_images() {
    if (!m_r.nccl_acceptance) return;
    add(k_nccl_tests_component, m_r.nccl_acceptance->image);
    if (m_r.nccl_acceptance->mpi_operator_install) add(k_mpi_operator_component, m_r.nccl_acceptance->mpi_operator_image);
  }

  void driver_images(const std::string& base) {
    const auto& d = m_lock.driver;
    if (m_digest_pinned) {
      add("driver", base + "@" + d.version);
    } else if (d.use_precompiled) {
      for (const auto& k : m_r.kernels) add("driver", base + ":" + d.branch + "-" + k + "-" + m_lock.os_tag);
    } else if (!d.version.empty()) {
      add("driver", base + ":" + d.version + "-" + m_lock.os_tag);
    }
  }

  void subchart_images(const ChartDependency& dep) {
    bool on = true;
    if (auto it = m_r.components.find(dep.name); it != m_r.components.end() && it->second.enabled) {
      on = *it->second.enabled;
    } else if (!dep.condition.empty()) {
      if (auto c = at_path(m_chart.values, dep.condition); is_string(c)) YAML::convert<bool>::decode(c, on);
    }
    if (!on) return;
    const Chart* sub = m_chart.subchart(dep.name);
    if (!sub) {
      warn("subchart " + dep.name + " is not packed in the chart; its images are not in this lock");
      return;
    }
    YAML::Node values = YAML::Clone(sub->values);
    merge_into(values, m_chart.values[dep.name]);
    // Subcharts use the common image: {repository: full/path, tag: x} shape.
    std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& n, const std::string& path) {
      if (!n.IsMap()) return;
      if (is_string(n["repository"]) && n["repository"].as<std::string>().find('/') != std::string::npos &&
          !n["image"]) {
        std::string tag = is_string(n["tag"]) ? n["tag"].as<std::string>() : "";
        if (tag.empty()) tag = sub->app_version;
        std::string component = path == "image" ? dep.name : dep.name + "." + path;
        add(component, n["repository"].as<std::string>() + (starts_with(tag, "sha256:") ? "@" : ":") + tag);
      }
      for (auto it = n.begin(); it != n.end(); ++it)
        walk(it->second, path.empty() ? it->first.as<std::string>() : path + "." + it->first.as<std::string>());
    };
    walk(values, "");
  }

  // auto is pinned the way the driver container resolves it on the nodes
  // (Catalog::auto_module_type). A host driver is the site's own: its type
  // stays pinned from the branch.
  std::string effective_module_type(int branch) {
    if (m_r.kernel_module_type != "auto") return m_r.kernel_module_type;
    if (m_r.driver_mode == DriverMode::Host) return branch >= m_cat.auto_open_from_branch() ? "open" : "proprietary";
    m_auto = m_cat.auto_module_type(m_gpus, m_lock.driver.version, m_lock.driver.branch);
    return m_auto.type;
  }

  std::string gpu_names() const {
    std::vector<std::string> names;
    for (const GpuInfo* g : m_gpus) names.push_back(g->name);
    return join(names, " + ");
  }

  // How auto came to `kmt`, for messages: "driver.kernelModuleType auto installs ...".
  std::string auto_installs(const std::string& kmt) const {
    std::string head = "driver.kernelModuleType auto installs " + kmt + " modules";
    if (m_auto.recommended) return head + " (" + m_auto.installer + " recommends them for " + gpu_names() + ")";
    return head + " with branch " + m_lock.driver.branch;
  }

  // Why a driver container's auto ignored the GPUs, "" where it did not.
  std::string fallback_why() const {
    if (m_auto.recommended || m_r.driver_mode == DriverMode::Host) return "";
    return " (nvidia-installer before " + m_cat.installer_recommends_from() +
           " cannot recommend a type, so the driver container falls back on the branch: open from " +
           std::to_string(m_cat.auto_open_from_branch()) + ")";
  }

  void compatibility() {
    auto& d = m_lock.driver;
    int branch = d.branch.empty() ? 0 : std::stoi(d.branch);
    std::string shown = d.version.empty() ? "branch " + d.branch : d.version;
    std::string field = m_version_field == "driver"          ? "driver (chart default " + shown + ")"
                        : m_version_field == "driver.branch" ? "driver.branch " + d.branch
                                                             : m_version_field + " " + shown;

    std::string kmt = branch ? effective_module_type(branch) : m_r.kernel_module_type;
    d.kernel_module_type = kmt;
    const bool is_auto = m_r.kernel_module_type == "auto";

    // No one module type fits a GPU that needs open modules and one that has
    // none. Nodes with each can still share a cluster where the driver
    // container compiles on the node and its installer recommends a type from
    // that node's GPUs: then auto stays auto, and each node picks.
    const GpuInfo* needs_open = nullptr;
    const GpuInfo* no_open = nullptr;
    for (const GpuInfo* g : m_gpus) {
      if (g->open_modules_required && !needs_open) needs_open = g;
      if (g->open_modules_unsupported && !no_open) no_open = g;
    }
    const bool split = needs_open && no_open && m_r.driver_mode != DriverMode::Host;
    const bool per_node = split && is_auto && branch && m_r.driver_mode == DriverMode::Conventional && m_auto.recommended;
    if (per_node) {
      kmt = d.kernel_module_type = "auto";
      warn("driver.kernelModuleType stays auto: " + needs_open->name + " needs open kernel modules and " + no_open->name +
           " has none, so each node's driver container picks from its own GPUs (" + m_auto.installer +
           " recommends per node); a node with both cannot run either type");
    } else if (is_auto && branch && !m_gpus.empty() && m_r.driver_mode != DriverMode::Host) {
      std::string how = m_auto.recommended ? ": " + m_auto.installer + " recommends " + kmt + " for " + gpu_names()
                            : " for branch " + d.branch + fallback_why();
      warn("driver.kernelModuleType auto pinned to " + kmt + how +
           "; the build machine cannot see the GPUs, so the lock and values name it explicitly");
    }
    const bool mixed = split;
    if (mixed && !per_node)
      error("target.gpus[" + std::to_string(gpu_index(no_open)) + "]",
            "target.gpus: " + needs_open->name + " (" + needs_open->architecture + ") needs open kernel modules and " +
                no_open->name + " (" + no_open->architecture + ") has none, so no driver.kernelModuleType serves both" +
                (m_r.driver_mode == DriverMode::Conventional
                     ? std::string(" (driver.kernelModuleType: auto with a driver of ") + m_cat.installer_recommends_from() +
                           " or later lets each node's driver container pick)"
                     : std::string(", and a precompiled driver is built with one")) +
                "; or make a recipe for each, each for its own cluster");

    for (size_t i = 0; i < m_gpus.size(); ++i) {
      const GpuInfo* g = m_gpus[i];
      // The stricter minimum version is NVIDIA's word on driver containers;
      // a host driver is only held to the branch.
      const bool container = m_r.driver_mode != DriverMode::Host;
      const bool version_minimum = container && !g->min_version.empty();
      std::string needs = "needs >= " + (version_minimum ? g->min_version : std::to_string(g->min_branch)) +
                          (g->open_modules_required ? ", open modules" : "");
      if (!g->operator_from.empty() && compare_versions(m_version, g->operator_from) < 0)
        error("target.gpus[" + std::to_string(gpu_index(g)) + "]",
              "target.gpus: " + g->name + " is supported from GPU Operator " + g->operator_from + " on, but operator.version is " +
                  m_version + "; use " + g->operator_from + " or later");
      bool past_last_branch = false;
      if (branch) {
        bool too_old = branch < g->min_branch;
        if (!too_old && version_minimum && !d.version.empty() && branch == g->min_branch)
          too_old = compare_versions(d.version, g->min_version) < 0;
        if (too_old) error(m_version_field, field + " does not support " + g->name + " (" + needs + ")");
        past_last_branch = g->max_branch && branch > g->max_branch;
        if (past_last_branch)
          error(m_version_field, field + " does not support " + g->name + " (" + g->architecture + "): branch " +
                                     std::to_string(g->max_branch) + " is the last that does; pin driver.branch: \"" +
                                     std::to_string(g->max_branch) + "\" or older");
      }
      // Already refused above with a better fix.
      if (mixed || (past_last_branch && is_auto)) continue;
      if (g->open_modules_unsupported && kmt == "open") {
        const std::string why = is_auto ? fallback_why() : "";
        error(is_auto ? m_version_field : "driver.kernelModuleType",
              g->name + " (" + g->architecture + ") has no open kernel modules, but " +
                  (is_auto ? auto_installs(kmt) + why : std::string("driver.kernelModuleType is open")) +
                  "; set driver.kernelModuleType: proprietary" +
                  (why.empty() ? "" : ", or use a driver of " + m_cat.installer_recommends_from() + " or later"));
      }
      if (g->open_modules_required && kmt == "proprietary") {
        error(is_auto ? m_version_field : "driver.kernelModuleType",
              g->name + " (" + g->architecture + ") needs open kernel modules, but " +
                  (is_auto ? auto_installs(kmt) : std::string("driver.kernelModuleType is proprietary")) +
                  "; set driver.kernelModuleType: open");
      }
    }

    if (branch) driver_support(branch, field);
    operator_spec_checks();

    bool gds = enabled("gds");
    // GDS (nvidia-fs) and GDRCopy (gdrdrv) run as sidecars of the driver
    // DaemonSet: the operator refuses them with precompiled drivers and never
    // starts them without a driver container.
    bool gdrcopy = at_path(m_chart.values, "gdrcopy").IsDefined() && enabled("gdrcopy");
    if (m_r.driver_mode == DriverMode::Precompiled) {
      if (gds) error("components.gds", "precompiled drivers do not support GPUDirect Storage (gds); disable components.gds or use driver.mode: conventional");
      if (gdrcopy)
        error(m_r.components.count("gdrcopy") ? "components.gdrcopy" : "driver.mode",
              "components.gdrcopy is on, but driver.mode is precompiled: GPU Operator " + m_version +
                  " refuses GDRCopy with precompiled drivers; disable components.gdrcopy or use driver.mode: conventional");
      if (std::find(m_r.workloads.begin(), m_r.workloads.end(), "vm-vgpu") != m_r.workloads.end())
        error("target.workloads", "target.workloads has vm-vgpu, but driver.mode is precompiled: precompiled drivers do not "
                                  "support vGPU; remove vm-vgpu or use driver.mode: conventional");
      if (!m_cat.precompiled_published(m_r.os))
        warn("NVIDIA publishes precompiled driver images for Ubuntu only; for " + m_r.os +
             " build them with `gpubundle driver build`");
    }
    if (m_r.driver_mode == DriverMode::Host)
      for (auto [key, title, on] : {std::tuple{"gds", "GPUDirect Storage (nvidia-fs)", gds}, {"gdrcopy", "GDRCopy (gdrdrv)", gdrcopy}})
        if (on)
          error(m_r.components.count(key) ? "components." + std::string(key) : std::string("driver.mode"),
                "components." + std::string(key) + " is on, but driver.mode is host: the operator runs " + title +
                    " inside the driver DaemonSet, which host mode switches off, so it would never start; install it "
                    "on the host and set components." + key + ": false, or use driver.mode: conventional");
    if (gds && kmt == "proprietary" && m_r.driver_mode != DriverMode::Host)
      error("components.gds", "components.gds is on, but " +
                                  (m_r.kernel_module_type == "proprietary"
                                       ? std::string("driver.kernelModuleType is proprietary")
                                       : auto_installs(kmt)) +
                                  ": GPUDirect Storage (nvidia-fs) needs open kernel modules; set driver.kernelModuleType: open "
                                  "or disable components.gds");
    if (branch && branch < 580 && m_dra)
      error("components.draDriver", "the DRA driver needs driver branch >= 580, not " + d.branch);
    if (m_dra) dra_stack();

    if (auto why = m_cat.os_name_problem(m_version, m_r.os); !why.empty())
      error("target.os", "target.os " + m_r.os + ": " + why);
    else if (auto supported = m_cat.os_supported(m_version, m_r.os); !supported)
      warn("the catalog has no OS support data for GPU Operator " + m_version + "; check that it supports " + m_r.os);
    else if (!*supported)
      warn("GPU Operator " + m_version + " does not list " + m_r.os + " as supported");

    mig();
  }

  // Settings for ClusterPolicy operands mean nothing in the GPUCluster (DRA)
  // stack, which has no sandbox operands, MIG manager or device plugin.
  void dra_stack() {
    const std::string dra = "components.draDriver deploys the GPUCluster (DRA) stack instead of the ClusterPolicy";
    for (const auto& w : m_r.workloads)
      if (w != "container")
        error("target.workloads", "target.workloads lists " + w + ", but " + dra +
                                      ", and only the ClusterPolicy runs VM workloads; remove " + w + " or components.draDriver");
    if (!m_r.mig_config.empty())
      error("mig.config", "mig.config is set, but " + dra + ", which has no MIG manager (the DRA driver manages MIG "
                          "devices itself); remove mig.config or components.draDriver");
    if (!m_r.mig_strategy.empty())
      error("mig.strategy", "mig.strategy is set, but " + dra + ", whose device plugin and GFD read it; remove mig.strategy "
                            "or components.draDriver");
    if (m_r.time_slicing_replicas > 0)
      error("sharing.timeSlicing.replicas", "sharing.timeSlicing is set, but " + dra +
                                                ", which has no device plugin to share GPUs; remove sharing or components.draDriver");
    if (m_r.toolkit_mode == ToolkitMode::Container)
      warn("components.draDriver: the GPUCluster (DRA) stack deploys no container toolkit; the nodes' container runtime "
           "must support CDI (the DRA driver writes CDI specs)");
  }

  // What the operator's ClusterPolicy checks refuse or switch off at run time
  // for values the recipe decides (controllers/state_manager.go,
  // upgrade_controller.go).
  void operator_spec_checks() {
    auto flag = [&](const std::string& path) {
      bool v = false;
      if (auto n = at_path(m_chart.values, path); is_string(n)) YAML::convert<bool>::decode(n, v);
      return v;
    };
    // validateClusterPolicySpec (v26.3 on): the NRI plugin runs inside the toolkit.
    if (m_r.toolkit_mode == ToolkitMode::Host && flag("cdi.nriPluginEnabled"))
      error("toolkit.mode", "toolkit.mode is host, but chart " + m_chart.name + " " + m_version +
                                " sets cdi.nriPluginEnabled: GPU Operator " + m_version +
                                " refuses the NRI plugin without its container toolkit; use toolkit.mode: container or a "
                                "chart with cdi.nriPluginEnabled: false");
    // The upgrade controller skips ClusterPolicy driver upgrades whenever
    // sandboxWorkloads.enabled, which the kit sets for VM workloads.
    bool vm = std::any_of(m_r.workloads.begin(), m_r.workloads.end(), [](const std::string& w) { return w != "container"; });
    if (vm && m_r.driver_mode != DriverMode::Host && flag("driver.upgradePolicy.autoUpgrade"))
      warn("target.workloads lists a VM workload, so the kit sets sandboxWorkloads.enabled, and GPU Operator " + m_version +
           " then skips driver.upgradePolicy.autoUpgrade: a new driver version is not rolled out node by node; drain and "
           "restart the driver pods yourself when you change driver.version");
  }

  // The driver branch against the release's component matrix. A newer branch
  // than the matrix lists is refused for driver containers: their entrypoint
  // and the operator's env contract move together (containers from
  // 570.133.20/550.163.01/535.247.01 on read KERNEL_MODULE_TYPE, which v24.x
  // never sets), and this release was never tested with it. A host driver only meets the operator through NVML, which stays
  // compatible with older clients: a warning. A branch inside the range that
  // the matrix skips is a warning too. Without a matrix for the release, the
  // chart's own default driver stands in, and newer is only warned about.
  void driver_support(int branch, const std::string& field) {
    std::string chart_default;
    if (auto v = at_path(m_chart.values, "driver.version"); is_string(v)) chart_default = v.as<std::string>();
    const int chart_branch = std::atoi(major_of(chart_default).c_str());
    const auto listed = m_cat.operator_driver_branches(m_version);
    std::vector<int> supported = listed.value_or(std::vector<int>{});
    if (chart_branch && std::find(supported.begin(), supported.end(), chart_branch) == supported.end())
      supported.push_back(chart_branch);
    if (supported.empty()) return;
    std::sort(supported.begin(), supported.end());
    std::vector<std::string> names;
    for (int b : supported) names.push_back(std::to_string(b));
    const std::string facts = listed ? "its component matrix lists driver branches " + join(names, ", ")
                                     : "the catalog has no component matrix for it, and its chart defaults to branch " +
                                           std::to_string(chart_branch);
    const bool container = m_r.driver_mode != DriverMode::Host;
    if (branch > supported.back()) {
      std::string later = m_cat.first_operator_with_branch(branch, m_version);
      std::string fix = "pin driver.branch: \"" + std::to_string(supported.back()) + "\" or older" +
                        (later.empty() ? "" : ", or use operator.version " + later + " or later, which lists it");
      std::string what = field + " is newer than GPU Operator " + m_version + " supports: " + facts;
      if (container && listed)
        error(m_version_field, what + "; " + fix);
      else
        warn(what + (container ? "" : " (a host driver meets the operator only through NVML)") + "; consider: " + fix);
    } else if (listed && std::find(supported.begin(), supported.end(), branch) == supported.end()) {
      warn(field + " is not in GPU Operator " + m_version + "'s component matrix, which lists driver branches " +
           join(names, ", ") + ": NVIDIA has not tested this pair");
    }
  }

  // A profile of a layout fits a GPU that has it, or has its base profile
  // ("1g.10gb+me", "1g.24gb+gfx", "1g.24gb-me" on 1g.10gb / 1g.24gb).
  static bool has_profile(const GpuInfo& g, const std::string& profile) {
    std::string base = profile.substr(0, profile.find('+'));
    if (ends_with(base, "-me")) base.resize(base.size() - 3);
    for (const auto& p : g.mig_profiles)
      if (p == profile || p == base) return true;
    return false;
  }

  // The entries of a layout mig-parted applies to this GPU; empty when the
  // layout has none for it or asks for a profile it lacks.
  static std::vector<const MigLayoutEntry*> entries_for(const GpuInfo& g, const std::vector<MigLayoutEntry>& layout) {
    std::vector<const MigLayoutEntry*> out;
    for (const auto& e : layout) {
      bool listed = std::any_of(e.gpus.begin(), e.gpus.end(), [&](const std::string& id) { return g.has_pci(id); });
      if (!e.gpus.empty() && !listed) continue;
      if (e.gpus.empty() && e.devices)
        for (const auto& [profile, count] : *e.devices)
          if (!has_profile(g, profile)) return {};
      out.push_back(&e);
    }
    return out;
  }

  // Kubernetes label value: the MIG manager reads the layout from the node
  // label nvidia.com/mig.config.
  static bool label_value(const std::string& v) {
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    if (v.empty() || v.size() > 63 || !alnum(v.front()) || !alnum(v.back())) return false;
    return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
  }

  void mig() {
    if (m_r.mig_config.empty()) return;
    const std::string& name = m_r.mig_config;
    if (!label_value(name)) {
      error("mig.config", "mig.config '" + name + "' is not a Kubernetes label value (the MIG manager reads it from the "
                          "node label nvidia.com/mig.config): use letters, digits, '-', '_' or '.', e.g. all-1g.10gb.me for 1g.10gb+me");
      return;
    }
    std::string strategy = m_r.mig_strategy;
    if (auto s = at_path(m_chart.values, "mig.strategy"); strategy.empty() && is_string(s)) strategy = s.as<std::string>();
    const MigLayouts* layouts = m_cat.mig_layouts(m_version);
    const bool generated = m_cat.mig_layouts_generated(m_version);
    for (const auto* g : m_gpus) {
      if (g->mig_profiles.empty()) {
        if (name != "all-disabled")
          error("mig.config", "mig.config " + name + ": " + g->name + " does not support MIG; use all-disabled or leave mig.config out");
        continue;
      }
      if (!layouts) {
        warn("mig.config " + name + ": the catalog has no MIG layouts for GPU Operator " + m_version + "; not checked");
        return;
      }
      // What this release's MIG manager offers this GPU: its static config,
      // plus what it generates from the GPU's profiles from v26.3 on.
      std::map<std::string, std::set<std::string>> offered;  // name -> profiles it gives this GPU
      for (const auto& [n, layout] : *layouts) {
        auto entries = entries_for(*g, layout);
        if (entries.empty()) continue;
        auto& profiles = offered[n];
        for (const auto* e : entries)
          if (e->devices)
            for (const auto& [p, count] : *e->devices) profiles.insert(p);
      }
      if (generated) {
        offered.emplace("all-disabled", std::set<std::string>{});
        offered.emplace("all-enabled", std::set<std::string>{});
        for (const auto& p : g->mig_profiles) offered.emplace("all-" + p, std::set<std::string>{p});
        offered.emplace("all-balanced", std::set<std::string>{g->mig_profiles.begin(), g->mig_profiles.end()});
      }
      auto it = offered.find(name);
      if (it == offered.end()) {
        std::vector<std::string> names;
        for (const auto& [n, p] : offered) names.push_back(n);
        error("mig.config", "mig.config " + name + ": GPU Operator " + m_version + "'s MIG manager has no layout " + name +
                                " for " + g->name + " (" + g->pci + "); its layouts for " + g->name + ": " + join(names, ", "));
      } else if (strategy == "single" && it->second.size() > 1) {
        error(m_r.mig_strategy.empty() ? "mig.config" : "mig.strategy",
              "mig.strategy single" + std::string(m_r.mig_strategy.empty() ? " (the chart's default)" : "") +
                  " with mig.config " + name + ", which gives " + g->name + " the profiles " +
                  join({it->second.begin(), it->second.end()}, ", ") +
                  ": the single strategy needs one profile per node; set mig.strategy: mixed or choose a one-profile layout");
      }
    }
  }

  Result<Lock> finish() {
    Lock& l = m_lock;
    l.generator = std::string("gpubundle ") + GPUBUNDLE_VERSION;
    l.recipe_name = m_r.name;
    l.recipe_file = m_r.file.filename().string();
    if (auto text = read_file(m_r.file)) l.recipe_sha256 = sha256_hex(text.value());
    l.recipe_spec = recipe_spec();
    l.operator_version = m_version;
    l.chart = {m_chart.name, m_version, m_chart.app_version, m_r.chart, m_chart.sha256};
    for (const auto* g : m_gpus) l.gpus.push_back(g->name);
    l.os = m_r.os;
    l.kernels = m_r.kernels;
    l.platforms = m_r.platforms;
    l.workloads = m_r.workloads;
    l.destination_registry = m_r.destination_registry;
    l.destination_prefix = m_r.destination_prefix;
    l.destination_plain_http = m_r.destination_plain_http;
    for (auto& [source, img] : m_images) {
      img.platforms = m_r.platforms;
      if (!l.destination_registry.empty())
        img.destination = Reference::parse(source).value().rehomed(l.destination_registry, l.destination_prefix).str();
      l.images.push_back(img);
    }
    return l;
  }

  // The recipe as the lock records it: every default made explicit.
  std::string recipe_spec() const {
    nlohmann::json comps = nlohmann::json::object();
    for (const auto& [k, o] : m_r.components) {
      nlohmann::json c = nlohmann::json::object();
      if (o.enabled) c["enabled"] = *o.enabled;
      if (o.service_monitor) c["serviceMonitor"] = *o.service_monitor;
      comps[k] = c;
    }
    nlohmann::json j = {
        {"toolkit", {{"mode", to_string(m_r.toolkit_mode)}}},
        {"components", comps},
        {"mig", {{"strategy", m_r.mig_strategy}, {"config", m_r.mig_config}}},
        {"sharing", {{"timeSlicing", {{"replicas", m_r.time_slicing_replicas}, {"renameByDefault", m_r.time_slicing_rename}}}}},
        {"extraImages", m_r.extra_images},
        {"pullSecret", m_r.pull_secret},
    };
    if (const auto& a = m_r.nccl_acceptance)
      j["acceptance"] = {{"nccl", {{"image", a->image},
                                   {"nodes", a->nodes},
                                   {"gpusPerNode", a->gpus_per_node},
                                   {"minBytes", a->min_bytes},
                                   {"maxBytes", a->max_bytes},
                                   {"minBusBw", a->min_bus_bw},
                                   {"mpiOperator", {{"install", a->mpi_operator_install}, {"image", a->mpi_operator_image}}}}}};
    // Only when set: locks of recipes without it stay as they were.
    if (const auto& a = m_r.nccl_acceptance; a && !a->network.empty()) j["acceptance"]["nccl"]["network"] = a->network;
    if (const auto& m = m_r.monitoring) j["monitoring"] = {{"prometheusLabels", m->prometheus}, {"dashboardLabels", m->dashboard}};
    return j.dump();
  }

  const Recipe& m_r;
  const Chart& m_chart;
  const Catalog& m_cat;
  Lock m_lock;
  std::string m_version;
  std::string m_version_field;
  bool m_digest_pinned = false;
  AutoModuleType m_auto;  // how auto resolved, for a driver container
  bool m_dra = false;  // components.draDriver: the GPUCluster stack instead of the ClusterPolicy
  std::vector<const GpuInfo*> m_gpus;
  std::map<std::string, LockImage> m_images;
  std::vector<std::string> m_errors;
};

}  // namespace

Result<Lock> resolve(const Recipe& recipe, const Chart& chart, const Catalog& catalog) {
  return Resolver(recipe, chart, catalog).run();
}

}  // namespace gb
