#pragma once
// The one path from a recipe or lock to its chart, for every command; the
// rules (which source wins, file names, the default lock) are in
// recipes/chart_source.hpp. Sources:
//   http(s)://REPO  a Helm HTTP repository: GET REPO/index.yaml, the entry of
//                 <name> whose version equals <version>, then its first URL
//                 (relative to REPO or absolute); its sha256 "digest" is checked.
//   oci://REG/PATH  an OCI artifact at REG/PATH[/<name>]:<version> ("+" -> "_");
//                 the layer of type application/vnd.cncf.helm.chart.content.v1.tar+gzip.
//   a local path  a .tgz is read; a folder is packed (pack_chart_folder).
// A remote chart is taken from the store's copy when it has one. The chart a
// command used is kept at STORE/charts/<name>-<version>.tgz when it may
// write the store, so `bundle create`, `overrides` and `resolve` find it
// there without the network.

#include <filesystem>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "mirror/mirror.hpp"
#include "mirror/store.hpp"
#include "recipes/chart.hpp"
#include "recipes/chart_source.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

namespace gb::mirror {

inline constexpr std::string_view k_helm_chart_layer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

// What a command may touch to get a chart. resolve and overrides set only
// store_root: no network, nothing written.
struct ChartAccess {
  std::filesystem::path store_root;  // its charts/ is looked in
  Store* store = nullptr;            // set: the chart used is kept there
  ImageSource* network = nullptr;    // set: remote charts missing from the store are fetched
};

struct LoadedChart {
  recipes::Chart chart;
  std::string archive;   // the .tgz bytes
  bool fetched = false;  // downloaded by this call
  bool stored = false;   // written into the store by this call
};

// The .tgz bytes of a remote chart, downloaded (no store involved).
Result<std::string> fetch_chart_archive(const recipes::ChartSource& source, const std::string& name, const std::string& version, ImageSource& network);

struct ResolvedRecipe {
  recipes::Lock lock;
  LoadedChart chart;
  std::optional<LoadedChart> network_chart;  // the recipe's network section
};

// Recipe -> chart (--chart `chart_flag`, else operator.chart) -> lock. With
// a network section also its chart (network.chart, as operator.chart, kept in
// the store the same way) and its release image list (network.releaseFile:
// a local path, else the store's STORE/charts/<network_release_file_name>,
// else downloaded when the network is allowed, and kept there).
Result<ResolvedRecipe> resolve_recipe(const recipes::Recipe& recipe, const std::string& chart_flag, const ChartAccess& access);

// The chart a lock was resolved against: --chart, else the store's copy, else
// the lock's chart.source (relative to the lock's folder). Refused when its
// sha256 differs from the lock's chart.sha256. Every command that needs a
// lock's chart (the install kit above all) gets it here or from
// lock_chart_archive below.
Result<LoadedChart> lock_chart(const recipes::Lock& lock, const std::filesystem::path& lock_file, const std::string& chart_flag,
                               const ChartAccess& access);

// The network-operator chart of a lock's network section, by the same rules
// (the store's copy, else network.chart.source) and the same sha256 check.
Result<LoadedChart> lock_network_chart(const recipes::Lock& lock, const std::filesystem::path& lock_file, const ChartAccess& access);

// The same, for chart bytes the caller already has (a bundle's charts/ entry,
// named by `label`): parsed, and refused when its sha256 differs from the lock's.
Result<LoadedChart> lock_chart_archive(const recipes::Lock& lock, std::string archive, const std::string& label);
// The same against one chart entry of the lock (lock.network->chart).
Result<LoadedChart> locked_chart_archive(const recipes::LockChart& locked, std::string archive, const std::string& label);

// Resolves a chart URL from index.yaml against the repository URL.
std::string resolve_chart_url(const std::string& repo_url, const std::string& url);

}  // namespace gb::mirror
