#include "recipes/resolver.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "recipes/compatibility.hpp"
#include "recipes/reference.hpp"
#include "signing/digest.hpp"

namespace gb::recipes {

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
    if (wants_site_packages(m_r)) {
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
    if (wants_site_packages(m_r))
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

  // The compatibility rules over what is settled by now (recipes/compatibility.cpp).
  void compatibility() {
    const CompatibilityContext ctx{
        .recipe = m_r,
        .chart = m_chart,
        .catalog = m_cat,
        .operator_version = m_version,
        .gpus = m_gpus,
        .driver_branch = m_lock.driver.branch,
        .driver_version = m_lock.driver.version,
        .driver_field = m_version_field,
        .gds = enabled("gds"),
        .gdrcopy = at_path(m_chart.values, "gdrcopy").IsDefined() && enabled("gdrcopy"),
        .dra = m_dra,
    };
    Compatibility c = check_compatibility(ctx);
    m_lock.driver.kernel_module_type = c.kernel_module_type;
    for (const auto& p : c.findings.errors) error(p.field, p.message);
    for (const auto& w : c.findings.warnings) warn(w);
  }

  Result<Lock> finish() {
    Lock& l = m_lock;
    l.generator = std::string("gpubundle ") + GPUBUNDLE_VERSION;
    l.recipe_name = m_r.name;
    l.recipe_file = m_r.file.filename().string();
    if (auto text = read_file(m_r.file)) l.recipe_sha256 = signing::sha256_hex(text.value());
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
  bool m_dra = false;  // components.draDriver: the GPUCluster stack instead of the ClusterPolicy
  std::vector<const GpuInfo*> m_gpus;
  std::map<std::string, LockImage> m_images;
  std::vector<std::string> m_errors;
};

}  // namespace

Result<Lock> resolve(const Recipe& recipe, const Chart& chart, const Catalog& catalog) {
  return Resolver(recipe, chart, catalog).run();
}

}  // namespace gb::recipes
