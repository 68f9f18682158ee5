#include "recipes/compatibility.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "common/strings.hpp"

namespace gb::recipes {

namespace {

// The string at a values path, "" when it is absent or not a scalar.
std::string chart_string(const Chart& chart, const std::string& path) {
  auto n = at_path(chart.values, path);
  return n && n.IsScalar() ? n.as<std::string>() : "";
}

// A values switch; false when absent.
bool chart_flag(const Chart& chart, const std::string& path) {
  bool v = false;
  if (auto n = at_path(chart.values, path); n && n.IsScalar()) YAML::convert<bool>::decode(n, v);
  return v;
}

int branch_number(const std::string& branch) { return branch.empty() ? 0 : std::stoi(branch); }

// The driver as messages name it: "driver.version 550.127.08", "driver (chart default ...)".
std::string driver_named(const CompatibilityContext& ctx) {
  const std::string shown = ctx.driver_version.empty() ? "branch " + ctx.driver_branch : ctx.driver_version;
  return ctx.driver_field == "driver"          ? "driver (chart default " + shown + ")"
         : ctx.driver_field == "driver.branch" ? "driver.branch " + ctx.driver_branch
                                               : ctx.driver_field + " " + shown;
}

// Index in target.gpus of the first entry that named this GPU.
size_t gpu_index(const CompatibilityContext& ctx, const GpuInfo* g) {
  for (size_t i = 0; i < ctx.recipe.gpus.size(); ++i)
    if (ctx.catalog.find_gpu(ctx.recipe.gpus[i]) == g) return i;
  return 0;
}

std::string gpu_names(const CompatibilityContext& ctx) {
  std::vector<std::string> names;
  for (const GpuInfo* g : ctx.gpus) names.push_back(g->name);
  return join(names, " + ");
}

// The kernel module type the driver installs, and how auto came to it.
struct ModuleType {
  std::string type;
  AutoModuleType automatic;  // how auto resolved, for a driver container
};

// auto is pinned the way the driver container resolves it on the nodes
// (Catalog::auto_module_type). A host driver is the site's own: its type
// stays pinned from the branch.
ModuleType effective_module_type(const CompatibilityContext& ctx, int branch) {
  const Recipe& r = ctx.recipe;
  if (!branch || r.kernel_module_type != "auto") return {r.kernel_module_type, {}};
  if (r.driver_mode == DriverMode::Host)
    return {branch >= ctx.catalog.auto_open_from_branch() ? "open" : "proprietary", {}};
  AutoModuleType a = ctx.catalog.auto_module_type(ctx.gpus, ctx.driver_version, ctx.driver_branch);
  return {a.type, a};
}

// How auto came to `kmt`, for messages: "driver.kernelModuleType auto installs ...".
std::string auto_installs(const CompatibilityContext& ctx, const AutoModuleType& a, const std::string& kmt) {
  std::string head = "driver.kernelModuleType auto installs " + kmt + " modules";
  if (a.recommended) return head + " (" + a.installer + " recommends them for " + gpu_names(ctx) + ")";
  return head + " with branch " + ctx.driver_branch;
}

// Why a driver container's auto ignored the GPUs, "" where it did not.
std::string fallback_why(const CompatibilityContext& ctx, const AutoModuleType& a) {
  if (a.recommended || ctx.recipe.driver_mode == DriverMode::Host) return "";
  return " (nvidia-installer before " + ctx.catalog.installer_recommends_from() +
         " cannot recommend a type, so the driver container falls back on the branch: open from " +
         std::to_string(ctx.catalog.auto_open_from_branch()) + ")";
}

// The module type against the GPUs, and each GPU against the release and
// the driver branch.
Compatibility gpu_support(const CompatibilityContext& ctx, const ModuleType& chosen) {
  const Recipe& r = ctx.recipe;
  const Catalog& cat = ctx.catalog;
  const AutoModuleType& automatic = chosen.automatic;
  const int branch = branch_number(ctx.driver_branch);
  const std::string field = driver_named(ctx);
  Compatibility out;
  Findings& f = out.findings;
  std::string kmt = chosen.type;
  const bool is_auto = r.kernel_module_type == "auto";

  // No one module type fits a GPU that needs open modules and one that has
  // none. Nodes with each can still share a cluster where the driver
  // container compiles on the node and its installer recommends a type from
  // that node's GPUs: then auto stays auto, and each node picks.
  const GpuInfo* needs_open = nullptr;
  const GpuInfo* no_open = nullptr;
  for (const GpuInfo* g : ctx.gpus) {
    if (g->open_modules_required && !needs_open) needs_open = g;
    if (g->open_modules_unsupported && !no_open) no_open = g;
  }
  const bool mixed = needs_open && no_open && r.driver_mode != DriverMode::Host;
  const bool per_node = mixed && is_auto && branch && r.driver_mode == DriverMode::Conventional && automatic.recommended;
  if (per_node) {
    kmt = "auto";
    f.warn("driver.kernelModuleType stays auto: " + needs_open->name + " needs open kernel modules and " + no_open->name +
           " has none, so each node's driver container picks from its own GPUs (" + automatic.installer +
           " recommends per node); a node with both cannot run either type");
  } else if (is_auto && branch && !ctx.gpus.empty() && r.driver_mode != DriverMode::Host) {
    std::string how = automatic.recommended ? ": " + automatic.installer + " recommends " + kmt + " for " + gpu_names(ctx)
                                            : " for branch " + ctx.driver_branch + fallback_why(ctx, automatic);
    f.warn("driver.kernelModuleType auto pinned to " + kmt + how +
           "; the build machine cannot see the GPUs, so the lock and values name it explicitly");
  }
  out.kernel_module_type = kmt;
  if (mixed && !per_node)
    f.error("target.gpus[" + std::to_string(gpu_index(ctx, no_open)) + "]",
            "target.gpus: " + needs_open->name + " (" + needs_open->architecture + ") needs open kernel modules and " +
                no_open->name + " (" + no_open->architecture + ") has none, so no driver.kernelModuleType serves both" +
                (r.driver_mode == DriverMode::Conventional
                     ? std::string(" (driver.kernelModuleType: auto with a driver of ") + cat.installer_recommends_from() +
                           " or later lets each node's driver container pick)"
                     : std::string(", and a precompiled driver is built with one")) +
                "; or make a recipe for each, each for its own cluster");

  for (const GpuInfo* g : ctx.gpus) {
    // The stricter minimum version is NVIDIA's word on driver containers;
    // a host driver is only held to the branch.
    const bool container = r.driver_mode != DriverMode::Host;
    const bool version_minimum = container && !g->min_version.empty();
    std::string needs = "needs >= " + (version_minimum ? g->min_version : std::to_string(g->min_branch)) +
                        (g->open_modules_required ? ", open modules" : "");
    if (!g->operator_from.empty() && compare_versions(ctx.operator_version, g->operator_from) < 0)
      f.error("target.gpus[" + std::to_string(gpu_index(ctx, g)) + "]",
              "target.gpus: " + g->name + " is supported from GPU Operator " + g->operator_from + " on, but operator.version is " +
                  ctx.operator_version + "; use " + g->operator_from + " or later");
    bool past_last_branch = false;
    if (branch) {
      bool too_old = branch < g->min_branch;
      if (!too_old && version_minimum && !ctx.driver_version.empty() && branch == g->min_branch)
        too_old = compare_versions(ctx.driver_version, g->min_version) < 0;
      if (too_old) f.error(ctx.driver_field, field + " does not support " + g->name + " (" + needs + ")");
      past_last_branch = g->max_branch && branch > g->max_branch;
      if (past_last_branch)
        f.error(ctx.driver_field, field + " does not support " + g->name + " (" + g->architecture + "): branch " +
                                      std::to_string(g->max_branch) + " is the last that does; pin driver.branch: \"" +
                                      std::to_string(g->max_branch) + "\" or older");
    }
    // Already refused above with a better fix.
    if (mixed || (past_last_branch && is_auto)) continue;
    if (g->open_modules_unsupported && kmt == "open") {
      const std::string why = is_auto ? fallback_why(ctx, automatic) : "";
      f.error(is_auto ? ctx.driver_field : "driver.kernelModuleType",
              g->name + " (" + g->architecture + ") has no open kernel modules, but " +
                  (is_auto ? auto_installs(ctx, automatic, kmt) + why : std::string("driver.kernelModuleType is open")) +
                  "; set driver.kernelModuleType: proprietary" +
                  (why.empty() ? "" : ", or use a driver of " + cat.installer_recommends_from() + " or later"));
    }
    if (g->open_modules_required && kmt == "proprietary") {
      f.error(is_auto ? ctx.driver_field : "driver.kernelModuleType",
              g->name + " (" + g->architecture + ") needs open kernel modules, but " +
                  (is_auto ? auto_installs(ctx, automatic, kmt) : std::string("driver.kernelModuleType is proprietary")) +
                  "; set driver.kernelModuleType: open");
    }
  }
  return out;
}

// What the driver mode rules out: sidecars of the driver DaemonSet, vGPU and
// unpublished precompiled images.
Findings driver_mode_checks(const CompatibilityContext& ctx) {
  const Recipe& r = ctx.recipe;
  Findings f;
  // GDS (nvidia-fs) and GDRCopy (gdrdrv) run as sidecars of the driver
  // DaemonSet: the operator refuses them with precompiled drivers and never
  // starts them without a driver container.
  if (r.driver_mode == DriverMode::Precompiled) {
    if (ctx.gds) f.error("components.gds", "precompiled drivers do not support GPUDirect Storage (gds); disable components.gds or use driver.mode: conventional");
    if (ctx.gdrcopy)
      f.error(r.components.count("gdrcopy") ? "components.gdrcopy" : "driver.mode",
              "components.gdrcopy is on, but driver.mode is precompiled: GPU Operator " + ctx.operator_version +
                  " refuses GDRCopy with precompiled drivers; disable components.gdrcopy or use driver.mode: conventional");
    if (std::find(r.workloads.begin(), r.workloads.end(), "vm-vgpu") != r.workloads.end())
      f.error("target.workloads", "target.workloads has vm-vgpu, but driver.mode is precompiled: precompiled drivers do not "
                                  "support vGPU; remove vm-vgpu or use driver.mode: conventional");
    if (!ctx.catalog.precompiled_published(r.os))
      f.warn("NVIDIA publishes precompiled driver images for Ubuntu only; for " + r.os +
             " build them with `gpubundle driver build`");
  }
  if (r.driver_mode == DriverMode::Host)
    for (auto [key, title, on] :
         {std::tuple{"gds", "GPUDirect Storage (nvidia-fs)", ctx.gds}, {"gdrcopy", "GDRCopy (gdrdrv)", ctx.gdrcopy}})
      if (on)
        f.error(r.components.count(key) ? "components." + std::string(key) : std::string("driver.mode"),
                "components." + std::string(key) + " is on, but driver.mode is host: the operator runs " + title +
                    " inside the driver DaemonSet, which host mode switches off, so it would never start; install it "
                    "on the host and set components." + key + ": false, or use driver.mode: conventional");
  return f;
}

// target.os against the release's tag rule and support list.
Findings os_support(const CompatibilityContext& ctx) {
  const std::string& os = ctx.recipe.os;
  const std::string& version = ctx.operator_version;
  Findings f;
  if (auto why = ctx.catalog.os_name_problem(version, os); !why.empty())
    f.error("target.os", "target.os " + os + ": " + why);
  else if (auto supported = ctx.catalog.os_supported(version, os); !supported)
    f.warn("the catalog has no OS support data for GPU Operator " + version + "; check that it supports " + os);
  else if (!*supported)
    f.warn("GPU Operator " + version + " does not list " + os + " as supported");
  return f;
}

}  // namespace

void Findings::append(const Findings& more) {
  errors.insert(errors.end(), more.errors.begin(), more.errors.end());
  warnings.insert(warnings.end(), more.warnings.begin(), more.warnings.end());
}

Compatibility check_compatibility(const CompatibilityContext& ctx) {
  const Recipe& r = ctx.recipe;
  const int branch = branch_number(ctx.driver_branch);
  const ModuleType chosen = effective_module_type(ctx, branch);
  Compatibility out = gpu_support(ctx, chosen);
  const std::string& kmt = out.kernel_module_type;
  Findings& f = out.findings;

  f.append(driver_support(ctx));
  f.append(operator_spec_checks(ctx));
  f.append(driver_mode_checks(ctx));
  if (ctx.gds && kmt == "proprietary" && r.driver_mode != DriverMode::Host)
    f.error("components.gds", "components.gds is on, but " +
                                  (r.kernel_module_type == "proprietary" ? std::string("driver.kernelModuleType is proprietary")
                                                                         : auto_installs(ctx, chosen.automatic, kmt)) +
                                  ": GPUDirect Storage (nvidia-fs) needs open kernel modules; set driver.kernelModuleType: open "
                                  "or disable components.gds");
  if (branch && branch < 580 && ctx.dra)
    f.error("components.draDriver", "the DRA driver needs driver branch >= 580, not " + ctx.driver_branch);
  f.append(dra_stack(ctx));
  f.append(os_support(ctx));
  f.append(mig_layout(ctx));
  return out;
}

// A newer branch than the matrix lists is refused for driver containers:
// their entrypoint and the operator's env contract move together
// (containers from 570.133.20/550.163.01/535.247.01 on read
// KERNEL_MODULE_TYPE, which v24.x never sets), and this release was never
// tested with it. A host driver only meets the operator through NVML, which
// stays compatible with older clients: a warning. A branch inside the range
// that the matrix skips is a warning too. Without a matrix for the release,
// the chart's own default driver stands in, and newer is only warned about.
Findings driver_support(const CompatibilityContext& ctx) {
  Findings f;
  const int branch = branch_number(ctx.driver_branch);
  if (!branch) return f;
  const Catalog& cat = ctx.catalog;
  const std::string& version = ctx.operator_version;
  const std::string field = driver_named(ctx);
  const int chart_branch = std::atoi(split(chart_string(ctx.chart, "driver.version"), '.')[0].c_str());
  const auto listed = cat.operator_driver_branches(version);
  std::vector<int> supported = listed.value_or(std::vector<int>{});
  if (chart_branch && std::find(supported.begin(), supported.end(), chart_branch) == supported.end())
    supported.push_back(chart_branch);
  if (supported.empty()) return f;
  std::sort(supported.begin(), supported.end());
  std::vector<std::string> names;
  for (int b : supported) names.push_back(std::to_string(b));
  const std::string facts = listed ? "its component matrix lists driver branches " + join(names, ", ")
                                   : "the catalog has no component matrix for it, and its chart defaults to branch " +
                                         std::to_string(chart_branch);
  const bool container = ctx.recipe.driver_mode != DriverMode::Host;
  if (branch > supported.back()) {
    std::string later = cat.first_operator_with_branch(branch, version);
    std::string fix = "pin driver.branch: \"" + std::to_string(supported.back()) + "\" or older" +
                      (later.empty() ? "" : ", or use operator.version " + later + " or later, which lists it");
    std::string what = field + " is newer than GPU Operator " + version + " supports: " + facts;
    if (container && listed)
      f.error(ctx.driver_field, what + "; " + fix);
    else
      f.warn(what + (container ? "" : " (a host driver meets the operator only through NVML)") + "; consider: " + fix);
  } else if (listed && std::find(supported.begin(), supported.end(), branch) == supported.end()) {
    f.warn(field + " is not in GPU Operator " + version + "'s component matrix, which lists driver branches " +
           join(names, ", ") + ": NVIDIA has not tested this pair");
  }
  return f;
}

// From controllers/state_manager.go and upgrade_controller.go.
Findings operator_spec_checks(const CompatibilityContext& ctx) {
  const Recipe& r = ctx.recipe;
  const std::string& version = ctx.operator_version;
  Findings f;
  // validateClusterPolicySpec (v26.3 on): the NRI plugin runs inside the toolkit.
  if (r.toolkit_mode == ToolkitMode::Host && chart_flag(ctx.chart, "cdi.nriPluginEnabled"))
    f.error("toolkit.mode", "toolkit.mode is host, but chart " + ctx.chart.name + " " + version +
                                " sets cdi.nriPluginEnabled: GPU Operator " + version +
                                " refuses the NRI plugin without its container toolkit; use toolkit.mode: container or a "
                                "chart with cdi.nriPluginEnabled: false");
  // The upgrade controller skips ClusterPolicy driver upgrades whenever
  // sandboxWorkloads.enabled, which the kit sets for VM workloads.
  bool vm = std::any_of(r.workloads.begin(), r.workloads.end(), [](const std::string& w) { return w != "container"; });
  if (vm && r.driver_mode != DriverMode::Host && chart_flag(ctx.chart, "driver.upgradePolicy.autoUpgrade"))
    f.warn("target.workloads lists a VM workload, so the kit sets sandboxWorkloads.enabled, and GPU Operator " + version +
           " then skips driver.upgradePolicy.autoUpgrade: a new driver version is not rolled out node by node; drain and "
           "restart the driver pods yourself when you change driver.version");
  return f;
}

// The GPUCluster (DRA) stack has no sandbox operands, MIG manager or device plugin.
Findings dra_stack(const CompatibilityContext& ctx) {
  const Recipe& r = ctx.recipe;
  Findings f;
  if (!ctx.dra) return f;
  const std::string dra = "components.draDriver deploys the GPUCluster (DRA) stack instead of the ClusterPolicy";
  for (const auto& w : r.workloads)
    if (w != "container")
      f.error("target.workloads", "target.workloads lists " + w + ", but " + dra +
                                      ", and only the ClusterPolicy runs VM workloads; remove " + w + " or components.draDriver");
  if (!r.mig_config.empty())
    f.error("mig.config", "mig.config is set, but " + dra + ", which has no MIG manager (the DRA driver manages MIG "
                          "devices itself); remove mig.config or components.draDriver");
  if (!r.mig_strategy.empty())
    f.error("mig.strategy", "mig.strategy is set, but " + dra + ", whose device plugin and GFD read it; remove mig.strategy "
                            "or components.draDriver");
  if (r.time_slicing_replicas > 0)
    f.error("sharing.timeSlicing.replicas", "sharing.timeSlicing is set, but " + dra +
                                                ", which has no device plugin to share GPUs; remove sharing or components.draDriver");
  if (r.toolkit_mode == ToolkitMode::Container)
    f.warn("components.draDriver: the GPUCluster (DRA) stack deploys no container toolkit; the nodes' container runtime "
           "must support CDI (the DRA driver writes CDI specs)");
  return f;
}

bool has_mig_profile(const GpuInfo& gpu, const std::string& profile) {
  std::string base = profile.substr(0, profile.find('+'));
  if (ends_with(base, "-me")) base.resize(base.size() - 3);
  for (const auto& p : gpu.mig_profiles)
    if (p == profile || p == base) return true;
  return false;
}

std::vector<const MigLayoutEntry*> mig_entries_for(const GpuInfo& gpu, const std::vector<MigLayoutEntry>& layout) {
  std::vector<const MigLayoutEntry*> out;
  for (const auto& e : layout) {
    bool listed = std::any_of(e.gpus.begin(), e.gpus.end(), [&](const std::string& id) { return gpu.has_pci(id); });
    if (!e.gpus.empty() && !listed) continue;
    if (e.gpus.empty() && e.devices)
      for (const auto& [profile, count] : *e.devices)
        if (!has_mig_profile(gpu, profile)) return {};
    out.push_back(&e);
  }
  return out;
}

bool is_label_value(const std::string& value) { return !value.empty() && label_problem("nvidia.com/mig.config", value).empty(); }

Findings mig_layout(const CompatibilityContext& ctx) {
  const Recipe& r = ctx.recipe;
  const std::string& version = ctx.operator_version;
  Findings f;
  if (r.mig_config.empty()) return f;
  const std::string& name = r.mig_config;
  if (!is_label_value(name)) {
    f.error("mig.config", "mig.config '" + name + "' is not a Kubernetes label value (the MIG manager reads it from the "
                          "node label nvidia.com/mig.config): use letters, digits, '-', '_' or '.', e.g. all-1g.10gb.me for 1g.10gb+me");
    return f;
  }
  std::string strategy = r.mig_strategy.empty() ? chart_string(ctx.chart, "mig.strategy") : r.mig_strategy;
  const MigLayouts* layouts = ctx.catalog.mig_layouts(version);
  const bool generated = ctx.catalog.mig_layouts_generated(version);
  for (const auto* g : ctx.gpus) {
    if (g->mig_profiles.empty()) {
      if (name != "all-disabled")
        f.error("mig.config", "mig.config " + name + ": " + g->name + " does not support MIG; use all-disabled or leave mig.config out");
      continue;
    }
    if (!layouts) {
      f.warn("mig.config " + name + ": the catalog has no MIG layouts for GPU Operator " + version + "; not checked");
      return f;
    }
    // What this release's MIG manager offers this GPU: its static config,
    // plus what it generates from the GPU's profiles from v26.3 on.
    std::map<std::string, std::set<std::string>> offered;  // name -> profiles it gives this GPU
    for (const auto& [n, layout] : *layouts) {
      auto entries = mig_entries_for(*g, layout);
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
      f.error("mig.config", "mig.config " + name + ": GPU Operator " + version + "'s MIG manager has no layout " + name +
                                " for " + g->name + " (" + g->pci + "); its layouts for " + g->name + ": " + join(names, ", "));
    } else if (strategy == "single" && it->second.size() > 1) {
      f.error(r.mig_strategy.empty() ? "mig.config" : "mig.strategy",
              "mig.strategy single" + std::string(r.mig_strategy.empty() ? " (the chart's default)" : "") +
                  " with mig.config " + name + ", which gives " + g->name + " the profiles " +
                  join({it->second.begin(), it->second.end()}, ", ") +
                  ": the single strategy needs one profile per node; set mig.strategy: mixed or choose a one-profile layout");
    }
  }
  return f;
}

}  // namespace gb::recipes
