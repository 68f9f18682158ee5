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

namespace gb {

// Fails with one line per problem when the recipe is incompatible.
Result<Lock> resolve(const Recipe& recipe, const Chart& chart, const Catalog& catalog);

// Where the chart for this recipe is: --chart, a local path in the recipe
// (relative to the recipe), or the copy `gpubundle mirror` left in the store.
Result<std::filesystem::path> locate_chart(const Recipe& recipe, const std::filesystem::path& chart_override,
                                           const std::filesystem::path& store);

// File name the store keeps a chart under: "<name>-<version>.tgz".
std::string chart_file_name(const std::string& name, const std::string& version);

// True when the recipe's chart is a URL (https:// Helm repo or oci://).
bool is_remote_chart(const std::string& chart);

}  // namespace gb
