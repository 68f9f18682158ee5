#pragma once
// The rules every command follows from a recipe or lock to its chart and its
// lock file (docs/lock.md, "Where the chart and the lock are"). Pure logic:
// mirror/chart_fetch.hpp fetches and stores by these rules.
//
//   chart source   --chart PATH (a .tgz or an unpacked folder, relative to the
//                  working folder), else the recipe's operator.chart (a lock's
//                  chart.source): a path relative to the recipe's (lock's)
//                  folder, an http(s):// Helm repository or oci://REGISTRY/PATH.
//   stored chart   STORE/charts/<chart name>-<release version>.tgz; a folder
//                  is packed into that .tgz the way `helm package` does.
//   default lock   <recipe folder>/<metadata.name>.lock.json

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

namespace gb::recipes {

// The chart every recipe installs; the name looked up in Helm repositories
// and appended to oci:// paths.
inline constexpr const char* k_operator_chart = "gpu-operator";

enum class ChartOrigin { None, Folder, Archive, HelmRepo, Oci };

struct ChartSource {
  ChartOrigin origin = ChartOrigin::None;
  std::string location;  // the URL, or the local path resolved against its base folder
  std::string written;   // as --chart, the recipe or the lock gave it
  bool remote() const { return origin == ChartOrigin::HelmRepo || origin == ChartOrigin::Oci; }
};

// --chart (`flag`) wins over `declared` (operator.chart or a lock's
// chart.source, relative to `declared_base`). None when both are empty.
ChartSource select_chart_source(const std::string& flag, const std::string& declared, const std::filesystem::path& declared_base);

// The store's copy of a remote network.releaseFile, next to the charts:
// "network-operator-<version without v>.release.yaml".
std::string network_release_file_name(const std::string& version);

// File name the store, a bundle and the install kit keep a chart under: "<name>-<version>.tgz".
std::string chart_file_name(const std::string& name, const std::string& version);

// The lock `gpubundle mirror` and `build` write for a recipe when no path is
// given, and the one `bundle create` and `overrides` read when given the recipe.
std::filesystem::path default_lock_path(const Recipe& recipe);

// The lock's chart.source for a lock written at `lock_file`: the recipe's
// operator.chart, a relative local path rewritten to start at the lock's folder.
std::string chart_source_for_lock(const Recipe& recipe, const std::filesystem::path& lock_file);
// Sets the lock's chart.source, and its network.chart.source by the same rule.
void set_chart_sources_for_lock(Lock& lock, const Recipe& recipe, const std::filesystem::path& lock_file);

// A lock is JSON; a recipe is YAML and never starts with '{'.
bool looks_like_lock(std::string_view text);

// A command's RECIPE|LOCK argument, read and parsed as what it is.
struct RecipeOrLock {
  std::optional<Recipe> recipe;
  std::optional<Lock> lock;
};
Result<RecipeOrLock> read_recipe_or_lock(const std::filesystem::path& file);

// The lock a command reads for a RECIPE|LOCK argument: the lock itself, or the
// recipe's default lock, which must exist ("run `gpubundle mirror RECIPE` first").
struct LockFile {
  Lock lock;
  std::filesystem::path file;
};
Result<LockFile> lock_for(const std::filesystem::path& input);

// A chart folder as a deterministic .tgz: every regular file under
// <Chart.yaml name>/, sorted, mtime 0, owner 0, no gzip timestamp.
Result<std::string> pack_chart_folder(const std::filesystem::path& folder);

}  // namespace gb::recipes
