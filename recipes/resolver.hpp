#pragma once
// Recipe + chart + catalog -> lock. Images come from the chart's own
// values.yaml (and its subcharts), so a new operator release resolves with no
// code change; the catalog adds only what values.yaml cannot say (OS tag rules,
// which operands are VM-only, GPU facts for the compatibility checks).

#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "recipes/catalog.hpp"
#include "recipes/chart.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

namespace gb::recipes {

// Fails with one line per problem when the recipe is incompatible.
Result<Lock> resolve(const Recipe& recipe, const Chart& chart, const Catalog& catalog);

}  // namespace gb::recipes
