#pragma once
// The lock: the exact image closure of one recipe. JSON, written with sorted
// keys and two-space indent so that a team can keep it in Git and diff it.
// The full schema is in docs/lock.md; in short:
//
//   {
//     "schemaVersion": 1,               // readers refuse a newer one
//     "generator": "gpubundle 0.1.0",
//     "recipe":   {name, file, sha256, spec: {...normalised recipe...}},
//     "operator": {version},
//     "chart":    {name, version, appVersion, source, sha256},
//     "target":   {gpus[], os, osTag, kernels[], platforms[], workloads[]},
//     "driver":   {mode, version, branch, kernelModuleType, usePrecompiled},
//     "destination": {registry, prefix} | null,
//     "images": [ {components[], source, platforms[], destination, digest, origin} ],
//     "warnings": []
//   }
//
// images are sorted by source. digest stays "" until `gpubundle mirror` fills
// it; origin is "upstream" (pulled) or "built" (made by `driver build`).

#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb {

constexpr int k_lock_schema_version = 1;
// The component of a baked node overlay artifact (node-images/overlay_artifact.hpp):
// carried and imported like an image, but no chart values key.
inline constexpr const char* k_node_overlay_component = "nodeOverlay";

struct LockImage {
  std::vector<std::string> components;  // values keys, e.g. ["devicePlugin", "gfd"]
  std::string source;                   // full reference as pulled
  std::vector<std::string> platforms;
  std::string destination;  // empty when the recipe has no destination
  std::string digest;       // manifest (or index) digest, "" until mirrored
  std::string origin = "upstream";
};

struct LockChart {
  std::string name;
  std::string version;      // the release version (never the placeholder)
  std::string app_version;  // as shipped in Chart.yaml
  std::string source;       // path or URL the recipe named
  std::string sha256;       // of the .tgz, when known
};

struct LockDriver {
  std::string mode;     // conventional | precompiled | host
  std::string version;  // full version, digest, or "" (host without version)
  std::string branch;
  std::string kernel_module_type;  // what the values will pin: auto | open | proprietary
  bool use_precompiled = false;
};

struct Lock {
  int schema_version = k_lock_schema_version;
  std::string generator;
  std::string recipe_name;
  std::string recipe_file;
  std::string recipe_sha256;
  std::string recipe_spec;  // normalised recipe as a JSON object text
  std::string operator_version;
  LockChart chart;
  std::vector<std::string> gpus;  // catalog names
  std::string os;
  std::string os_tag;
  std::vector<std::string> kernels;
  std::vector<std::string> platforms;
  std::vector<std::string> workloads;
  LockDriver driver;
  std::string destination_registry;
  std::string destination_prefix;
  std::vector<LockImage> images;
  std::vector<std::string> warnings;

  LockImage* find(const std::string& source);
};

std::string lock_to_json(const Lock& lock);
Result<Lock> parse_lock(const std::string& text, const std::string& file);
Result<Lock> load_lock(const std::string& file);

}  // namespace gb
