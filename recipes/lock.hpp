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
//     "destination": {registry, prefix, plainHttp?} | null,   // plainHttp only when true
//     "images": [ {components[], source, platforms[], destination, digest, origin} ],
//     "warnings": []
//   }
//
// images are sorted by source. digest stays "" until `gpubundle mirror` fills
// it; origin is "upstream" (pulled) or "built" (made by `driver build`).
//
// A lock also arrives inside a bundle from outside, and its values end up in
// values.yaml, scripts, file names and registry URLs. parse_lock() therefore
// checks every field it will write somewhere: references parse, digests are
// sha256:<64 hex>, versions, names and kernels have the recipe's shapes
// (recipes/recipe.hpp), enums are known words. Limits, checked before
// anything is parsed or kept:
//   text               k_lock_max_bytes   (16 MiB)
//   images             k_lock_max_images  (10000)
//   any other list     k_lock_max_list    (1024 entries)
//   any one string     k_lock_max_string  (4096 bytes)
//   chart name, version k_lock_max_chart_word (100 bytes each: they make the
//                      kit's NAME-VERSION.tgz file name)
//   JSON nesting       k_lock_max_depth   (32)

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb {

constexpr int k_lock_schema_version = 1;
constexpr std::size_t k_lock_max_bytes = 16 << 20;
constexpr std::size_t k_lock_max_images = 10000;
constexpr std::size_t k_lock_max_list = 1024;
constexpr std::size_t k_lock_max_string = 4096;
constexpr std::size_t k_lock_max_chart_word = 100;
constexpr int k_lock_max_depth = 32;
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
  bool destination_plain_http = false;
  std::vector<LockImage> images;
  std::vector<std::string> warnings;

  LockImage* find(const std::string& source);
};

std::string lock_to_json(const Lock& lock);
Result<Lock> parse_lock(const std::string& text, const std::string& file);
Result<Lock> load_lock(const std::string& file);

}  // namespace gb
