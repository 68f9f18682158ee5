#pragma once
// The compatibility rules a recipe meets at resolve time: driver branch
// against GPU and operator release, open or proprietary kernel modules, what
// the driver mode rules out, the DRA stack, the operator's own spec checks,
// the OS and MIG layouts. Read-only over what the resolver has settled; the
// resolver records what they find. Used by the resolver and its tests only.

#include <string>
#include <vector>

#include "recipes/catalog.hpp"
#include "recipes/chart.hpp"
#include "recipes/recipe.hpp"

namespace gb::recipes {

// What the rules read: the inputs, and the facts the resolver chose from them.
struct CompatibilityContext {
  const Recipe& recipe;
  const Chart& chart;
  const Catalog& catalog;
  std::string operator_version;      // the recipe's, else the chart's
  std::vector<const GpuInfo*> gpus;  // target.gpus the catalog knows, each once, in recipe order
  std::string driver_branch;         // as the lock records it; "" when none
  std::string driver_version;        // full version, digest or ""
  std::string driver_field;          // where the driver came from: driver.version | driver.branch | driver (chart default)
  bool gds = false;                  // the operator runs GPUDirect Storage (nvidia-fs)
  bool gdrcopy = false;              // the operator runs GDRCopy (gdrdrv)
  bool dra = false;                  // components.draDriver: the GPUCluster stack instead of the ClusterPolicy
};

// A refusal, at the recipe field Recipe::where points it to.
struct Problem {
  std::string field;
  std::string message;
};

// What a rule found, in the order it found it.
struct Findings {
  std::vector<Problem> errors;
  std::vector<std::string> warnings;

  void error(const std::string& field, const std::string& message) { errors.push_back({field, message}); }
  void warn(const std::string& message) { warnings.push_back(message); }
  void append(const Findings& more);
};

struct Compatibility {
  std::string kernel_module_type;  // what the lock pins: open | proprietary, or auto where each node picks
  Findings findings;
};

// Every rule, in the order the resolver reports them.
Compatibility check_compatibility(const CompatibilityContext& ctx);

// The driver branch against the release's component matrix (or, without
// one, the chart's default driver); nothing without a branch.
Findings driver_support(const CompatibilityContext& ctx);
// What the operator's ClusterPolicy checks refuse or switch off at run time.
Findings operator_spec_checks(const CompatibilityContext& ctx);
// ClusterPolicy settings that mean nothing in the GPUCluster (DRA) stack;
// nothing without ctx.dra.
Findings dra_stack(const CompatibilityContext& ctx);
// mig.config (and mig.strategy) against the release's MIG manager layouts.
Findings mig_layout(const CompatibilityContext& ctx);

// A GPU has a layout's profile when it has it or its base profile
// ("1g.10gb+me", "1g.24gb-me" on 1g.10gb / 1g.24gb).
bool has_mig_profile(const GpuInfo& gpu, const std::string& profile);
// The entries of a layout mig-parted applies to this GPU; empty when the
// layout has none for it or asks for a profile it lacks.
std::vector<const MigLayoutEntry*> mig_entries_for(const GpuInfo& gpu, const std::vector<MigLayoutEntry>& layout);
// A Kubernetes label value: the MIG manager reads the layout from the node
// label nvidia.com/mig.config.
bool is_label_value(const std::string& value);

}  // namespace gb::recipes
