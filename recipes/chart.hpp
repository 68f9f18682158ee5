#pragma once
// A Helm chart as the resolver sees it: Chart.yaml, values.yaml and its
// subcharts (folders under charts/ or nested .tgz files), read from a .tgz
// or a folder. Nothing is extracted to disk.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "common/error.hpp"

namespace gb::recipes {

struct ChartDependency {
  std::string name;
  std::string version;
  std::string repository;
  std::string condition;  // values path, e.g. nfd.enabled
};

struct Chart {
  std::string name;
  std::string version;
  std::string app_version;
  std::string values_text;  // values.yaml as shipped
  YAML::Node values;
  std::vector<ChartDependency> dependencies;
  std::vector<Chart> subcharts;
  std::string sha256;  // of the .tgz; empty when read from a folder
  std::filesystem::path path;

  const Chart* subchart(const std::string& name) const;
};

Result<Chart> load_chart(const std::filesystem::path& path);
// A chart .tgz already in memory (a nested subchart, or a download).
Result<Chart> load_chart_archive(const std::string& bytes, const std::string& label);

// The node at a dotted values path ("driver.manager"), or an undefined node;
// never writes into the tree.
YAML::Node at_path(const YAML::Node& root, const std::string& path);
// Helm's merge of a parent chart's values for a subchart over its own: maps
// merge key by key, anything else replaces.
void merge_into(YAML::Node base, const YAML::Node& over);

// True for the placeholder versions charts carry when packed from a git tag
// ("v1.0.0-devel", "devel-ubi8", "main-latest").
bool is_placeholder_version(const std::string& version);

// The archive files a chart is read from (path below the top folder):
// Chart.yaml, values.yaml, charts/NAME/{Chart,values}.yaml, charts/NAME.tgz.
bool is_chart_file_wanted(std::string_view rel_path);
// NAME for "charts/NAME<suffix>" where NAME is one non-empty path segment, else "".
std::string_view subchart_name(std::string_view rel_path, std::string_view suffix);

}  // namespace gb::recipes
