// The compatibility rules called directly over an in-memory recipe and chart;
// test_resolver.cpp covers them end to end, at recipe lines, on the real charts.
#include <catch2/catch.hpp>

#include "recipes/compatibility.hpp"

using namespace gb;
using namespace gb::recipes;

namespace {

Chart chart_with(const std::string& values) {
  Chart c;
  c.name = "gpu-operator";
  c.values = YAML::Load(values);
  return c;
}

Recipe recipe_for(const std::vector<std::string>& gpus) {
  Recipe r;
  r.gpus = gpus;
  r.os = "ubuntu22.04";
  r.workloads = {"container"};
  return r;
}

// What the resolver settles before the rules run, from the recipe alone.
CompatibilityContext context_of(const Recipe& r, const Chart& chart, const std::string& operator_version) {
  std::vector<const GpuInfo*> gpus;
  for (const auto& name : r.gpus)
    if (const GpuInfo* g = Catalog::builtin().find_gpu(name)) gpus.push_back(g);
  const std::string branch = r.driver_version.empty() ? r.driver_branch : r.driver_version.substr(0, r.driver_version.find('.'));
  return {.recipe = r,
          .chart = chart,
          .catalog = Catalog::builtin(),
          .operator_version = operator_version,
          .gpus = gpus,
          .driver_branch = branch,
          .driver_version = r.driver_version,
          .driver_field = !r.driver_version.empty() ? "driver.version" : !r.driver_branch.empty() ? "driver.branch" : "driver",
          .gds = false,
          .gdrcopy = false,
          .dra = false};
}

std::vector<std::string> fields_of(const Findings& f) {
  std::vector<std::string> out;
  for (const auto& p : f.errors) out.push_back(p.field);
  return out;
}

}  // namespace

TEST_CASE("the kernel module type the lock pins", "[compat][kmt]") {
  const Chart chart = chart_with("{}");
  Recipe host = recipe_for({"L4"});
  host.driver_mode = DriverMode::Host;
  // A host driver without a version: no branch to pin from, auto stays.
  auto unknown = check_compatibility(context_of(host, chart, "v24.9.2"));
  CHECK(unknown.kernel_module_type == "auto");
  CHECK(unknown.findings.errors.empty());
  CHECK(unknown.findings.warnings.empty());
  // With one: the branch decides, open from 560, and nothing is warned.
  host.driver_version = "550.127.08";
  auto old = check_compatibility(context_of(host, chart, "v24.9.2"));
  CHECK(old.kernel_module_type == "proprietary");
  CHECK(old.findings.warnings.empty());
  host.driver_version = "565.57.01";
  CHECK(check_compatibility(context_of(host, chart, "v24.9.2")).kernel_module_type == "open");

  // A refusal points at the field that chose the type: the driver for auto,
  // driver.kernelModuleType when the recipe named it.
  Recipe v100 = recipe_for({"V100-SXM2-16GB"});
  v100.driver_version = "565.57.01";
  auto automatic = check_compatibility(context_of(v100, chart, "v24.9.2"));
  CHECK(automatic.kernel_module_type == "open");
  CHECK(fields_of(automatic.findings) == std::vector<std::string>{"driver.version"});
  v100.kernel_module_type = "open";
  auto named = check_compatibility(context_of(v100, chart, "v24.9.2"));
  REQUIRE(fields_of(named.findings) == std::vector<std::string>{"driver.kernelModuleType"});
  CHECK(named.findings.errors[0].message ==
        "V100-SXM2-16GB (volta) has no open kernel modules, but driver.kernelModuleType is open; set driver.kernelModuleType: proprietary");
}

TEST_CASE("the rules report in the resolver's order", "[compat]") {
  const Chart chart = chart_with("{}");
  Recipe r = recipe_for({"L4"});
  r.driver_mode = DriverMode::Precompiled;
  r.driver_branch = "570";
  r.kernel_module_type = "open";
  r.kernels = {"5.15.0-126-generic"};
  r.workloads = {"container", "vm-vgpu"};
  auto ctx = context_of(r, chart, "v26.7.0");
  ctx.gds = true;
  ctx.gdrcopy = true;
  ctx.dra = true;
  auto c = check_compatibility(ctx);
  // Driver mode (gds, gdrcopy, vGPU), the DRA branch, then the DRA stack.
  CHECK(fields_of(c.findings) ==
        std::vector<std::string>{"components.gds", "driver.mode", "target.workloads", "components.draDriver", "target.workloads"});
  REQUIRE(c.findings.warnings.size() == 2);
  CHECK(c.findings.warnings[0] == "driver.branch 570 is not in GPU Operator v26.7.0's component matrix, which lists driver "
                                  "branches 535, 580, 595, 610: NVIDIA has not tested this pair");
  CHECK(c.findings.warnings[1].find("components.draDriver: the GPUCluster (DRA) stack deploys no container toolkit") == 0);
  CHECK(c.kernel_module_type == "open");
}

TEST_CASE("driver branch against the matrix, directly", "[compat]") {
  Recipe r = recipe_for({"L4"});
  // No branch (a host driver without a version): nothing to hold against it.
  r.driver_mode = DriverMode::Host;
  CHECK(driver_support(context_of(r, chart_with("{}"), "v24.6.2")).warnings.empty());
  // A host driver newer than the matrix: a warning, not a refusal.
  r.driver_version = "570.195.03";
  auto host = driver_support(context_of(r, chart_with("{}"), "v24.6.2"));
  CHECK(host.errors.empty());
  REQUIRE(host.warnings.size() == 1);
  CHECK(host.warnings[0].find("(a host driver meets the operator only through NVML)") != std::string::npos);
  r.driver_mode = DriverMode::Conventional;
  auto container = driver_support(context_of(r, chart_with("{}"), "v24.6.2"));
  CHECK(fields_of(container) == std::vector<std::string>{"driver.version"});
  // Neither a matrix nor a chart default: nothing to compare with.
  r.driver_version = "610.57.04";
  auto unknown = driver_support(context_of(r, chart_with("{}"), "v30.1.0"));
  CHECK(unknown.errors.empty());
  CHECK(unknown.warnings.empty());
  auto by_chart = driver_support(context_of(r, chart_with("driver: {version: 580.105.08}"), "v30.1.0"));
  REQUIRE(by_chart.warnings.size() == 1);
  CHECK(by_chart.warnings[0].find("the catalog has no component matrix for it, and its chart defaults to branch 580") !=
        std::string::npos);
}

TEST_CASE("operator spec checks read the chart's switches", "[compat]") {
  Recipe r = recipe_for({"L4"});
  r.toolkit_mode = ToolkitMode::Host;
  CHECK(fields_of(operator_spec_checks(context_of(r, chart_with("cdi: {nriPluginEnabled: true}"), "v26.7.0"))) ==
        std::vector<std::string>{"toolkit.mode"});
  CHECK(operator_spec_checks(context_of(r, chart_with("cdi: {nriPluginEnabled: false}"), "v26.7.0")).errors.empty());
  // The auto-upgrade a VM workload switches off is the driver container's: a host driver has none.
  const Chart upgrades = chart_with("driver: {upgradePolicy: {autoUpgrade: true}}");
  r.workloads = {"vm-passthrough"};
  CHECK(operator_spec_checks(context_of(r, upgrades, "v26.7.0")).warnings.size() == 1);
  r.driver_mode = DriverMode::Host;
  CHECK(operator_spec_checks(context_of(r, upgrades, "v26.7.0")).warnings.empty());
}

TEST_CASE("the DRA stack rules apply only with the DRA driver", "[compat]") {
  Recipe r = recipe_for({"H100-SXM5-80GB"});
  r.mig_strategy = "mixed";
  r.time_slicing_replicas = 4;
  r.toolkit_mode = ToolkitMode::Host;
  const Chart chart = chart_with("{}");
  auto ctx = context_of(r, chart, "v26.7.0");
  CHECK(dra_stack(ctx).errors.empty());
  ctx.dra = true;
  auto f = dra_stack(ctx);
  CHECK(fields_of(f) == std::vector<std::string>{"mig.strategy", "sharing.timeSlicing.replicas"});
  CHECK(f.warnings.empty());  // a host toolkit is the site's: no CDI warning
}

TEST_CASE("MIG profiles, layout entries and label values", "[compat][mig]") {
  const GpuInfo& h100 = *Catalog::builtin().find_gpu("H100-SXM5-80GB");
  // Media-extension and graphics variants fit a GPU with the base profile.
  CHECK(has_mig_profile(h100, "1g.20gb"));
  CHECK(has_mig_profile(h100, "1g.20gb+me"));
  CHECK(has_mig_profile(h100, "1g.20gb-me"));
  CHECK(has_mig_profile(h100, "2g.20gb+gfx"));
  CHECK_FALSE(has_mig_profile(h100, "1g.5gb+me"));
  CHECK_FALSE(has_mig_profile(h100, "1g.24gb-me"));

  const std::vector<MigLayoutEntry> by_gpu = {{{"10de:20b0"}, std::map<std::string, int>{{"1g.5gb", 7}}},
                                              {{"10de:2330"}, std::map<std::string, int>{{"1g.10gb", 7}}}};
  auto mine = mig_entries_for(h100, by_gpu);
  REQUIRE(mine.size() == 1);
  CHECK(mine[0] == &by_gpu[1]);
  // An entry for every GPU asking for a profile this one lacks: the whole layout is not for it.
  const std::vector<MigLayoutEntry> foreign = {{{"10de:2330"}, std::map<std::string, int>{{"1g.10gb", 7}}},
                                               {{}, std::map<std::string, int>{{"1g.5gb", 7}}}};
  CHECK(mig_entries_for(h100, foreign).empty());
  const std::vector<MigLayoutEntry> off = {{{}, std::nullopt}};
  CHECK(mig_entries_for(h100, off).size() == 1);

  CHECK(is_label_value("all-1g.10gb.me"));
  CHECK(is_label_value("A_1"));
  CHECK(is_label_value(std::string(63, 'a')));
  CHECK_FALSE(is_label_value(std::string(64, 'a')));
  CHECK_FALSE(is_label_value(""));
  CHECK_FALSE(is_label_value("-all"));
  CHECK_FALSE(is_label_value("all."));
  CHECK_FALSE(is_label_value("all-1g.10gb+me"));
}

TEST_CASE("MIG layouts, directly", "[compat][mig]") {
  Recipe h100 = recipe_for({"H100-SXM5-80GB"});
  h100.mig_config = "all-balanced";
  // The strategy falls back on the chart's; without one no layout is too mixed.
  CHECK(mig_layout(context_of(h100, chart_with("{}"), "v25.10.1")).errors.empty());
  const Chart single = chart_with("mig: {strategy: single}");
  auto by_chart = mig_layout(context_of(h100, single, "v25.10.1"));
  REQUIRE(fields_of(by_chart) == std::vector<std::string>{"mig.config"});
  CHECK(by_chart.errors[0].message.find("mig.strategy single (the chart's default) with mig.config all-balanced") == 0);
  h100.mig_strategy = "mixed";
  CHECK(mig_layout(context_of(h100, single, "v25.10.1")).errors.empty());

  // A GPU without MIG suits all-disabled only.
  Recipe both = recipe_for({"L4", "H100-SXM5-80GB"});
  both.mig_config = "all-balanced";
  auto l4 = mig_layout(context_of(both, chart_with("{}"), "v25.10.1"));
  REQUIRE(fields_of(l4) == std::vector<std::string>{"mig.config"});
  CHECK(l4.errors[0].message == "mig.config all-balanced: L4 does not support MIG; use all-disabled or leave mig.config out");
  both.mig_config = "all-disabled";
  CHECK(mig_layout(context_of(both, chart_with("{}"), "v25.10.1")).errors.empty());
  // Before the catalog's first release: not checked, and said so once.
  both.mig_config = "all-1g.10gb";
  auto early = mig_layout(context_of(both, chart_with("{}"), "v23.6.0"));
  CHECK(fields_of(early) == std::vector<std::string>{"mig.config"});  // L4's, which needs no layouts
  CHECK(early.warnings == std::vector<std::string>{
                              "mig.config all-1g.10gb: the catalog has no MIG layouts for GPU Operator v23.6.0; not checked"});
}
