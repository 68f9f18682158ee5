#pragma once
// Fetches the Helm chart a recipe names into STORE/charts/<name>-<version>.tgz
// (recipes/resolver.hpp chart_file_name(), where `gpubundle resolve` looks):
//   https://REPO  a Helm HTTP repository: GET REPO/index.yaml, the entry of
//                 <name> whose version equals <version>, then its first URL
//                 (relative to REPO or absolute); its sha256 "digest" is checked.
//   oci://REG/PATH  an OCI artifact at REG/PATH[/<name>]:<version> ("+" -> "_");
//                 the layer of type application/vnd.cncf.helm.chart.content.v1.tar+gzip.
//   anything else a local .tgz (relative to `relative_to`), copied.

#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "mirror/mirror.hpp"
#include "mirror/store.hpp"

namespace gb {

inline constexpr std::string_view k_helm_chart_layer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

struct ChartFetch {
  std::filesystem::path path;  // in the store
  bool fetched = false;        // false: already there
};

Result<ChartFetch> fetch_chart(const std::string& chart_source, const std::filesystem::path& relative_to, const std::string& name,
                               const std::string& version, Store& store, ImageSource& source);

// Resolves a chart URL from index.yaml against the repository URL.
std::string resolve_chart_url(const std::string& repo_url, const std::string& url);

}  // namespace gb
