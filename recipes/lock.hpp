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
//     "images": [ {components[], source, platforms[], destination, digest, siteDigest?, origin} ],
//     "packageRepo": {format, fingerprint, publicKey},   // only with a site package repository
//     "network": {version, chart: {name, version, appVersion, source, sha256},
//                 releaseFile, releaseSha256, operands[],
//                 docaDriver: {version, precompiled} | null},   // only with a recipe network section
//     "warnings": []
//   }
//
// images are sorted by source. digest stays "" until `gpubundle mirror` fills
// it; it is the upstream manifest or index digest. siteDigest is written only
// when the site registry holds another top manifest than upstream: the
// filtered index of an index whose platforms the lock carries only some of
// (mirror/oci.hpp filter_index); the kit pins it. An image platforms entry
// "all" carries every child of its index (mirror --platforms all); origin is "upstream" (pulled) or "built" (made here). A built image is
// a precompiled driver image (`driver build`, `build --installer`; components
// ["driver"]), a baked node overlay (`node-image bake`; components
// ["nodeOverlay"]), the site package repository image of a conventional
// recipe with packages.sources (components ["packageRepo"]) or the gpubundle
// tool image (`driver tool-image`; components ["toolImage"]): the component
// says which, so locks written before the kind was typed read the same. In
// memory that is LockImage::built.
//
// packageRepo describes that repository (packages/site_repo.hpp): its format
// ("apt"; "rpm-md" for the RHEL family), the OpenPGP fingerprint of the key
// that signs it (40 upper-case hex) and that public key, ASCII-armoured, which
// the kit gives the nodes. Its server image (packages.server.image) is an
// upstream image of component "packageServer".
//
// network is the NVIDIA Network Operator (recipes/network.hpp): its release,
// its chart (kept and carried like the GPU Operator's), the image list it was
// resolved from (hack/release.yaml, its sha256), the operands (catalog names)
// and the DOCA driver version the NicClusterPolicy names (null without the
// ofedDriver operand); precompiled: the images are per kernel. Its images are
// in `images` with components "network:<operand>" or "network:<values path>".
// A lock without "network" has none.
// The recipe's acceptance.nccl adds upstream images of component "ncclTests"
// (its image) and, with mpiOperator.install, "mpiOperator"; recipe.spec then
// holds acceptance.nccl with every default made explicit.
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

namespace gb::recipes {

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
// The site package repository image (built) and the HTTP server image it is
// built from (pulled): carried and imported like images, no chart values key.
inline constexpr const char* k_package_repo_component = "packageRepo";
inline constexpr const char* k_package_server_component = "packageServer";
// The gpubundle tool image (node-images/tool_image.hpp) that build Jobs run:
// carried and imported like an image, no chart values key, no runtime mirror.
inline constexpr const char* k_tool_image_component = "toolImage";
// The NCCL acceptance job's images (recipe acceptance.nccl, kit/kit_acceptance.cpp):
// the nccl-tests image and, with mpiOperator.install, the Kubeflow MPI
// Operator's. Carried and imported like images; no chart values key.
inline constexpr const char* k_nccl_tests_component = "ncclTests";
inline constexpr const char* k_mpi_operator_component = "mpiOperator";
// The default acceptance.nccl.mpiOperator.image: the controller image of the
// upstream release manifest deploy/v2beta1/mpi-operator.yaml at v0.8.0.
inline constexpr const char* k_default_mpi_operator_image = "docker.io/mpioperator/mpi-operator:0.8.0";
// The default packages.server.image: busybox's httpd serves static files.
inline constexpr const char* k_default_package_server_image = "docker.io/library/busybox:1.36.1";
// How the repository image serves: the folder in the image, the port, and
// the apt suite and component (packages/site_repo.hpp, kit/).
inline constexpr const char* k_package_repo_root = "srv/gpubundle-repo";
inline constexpr int k_package_repo_port = 8080;
inline constexpr const char* k_package_repo_suite = "gpubundle";
inline constexpr const char* k_package_repo_area = "main";
inline constexpr const char* k_package_repo_key_file = "gpubundle-repo.asc";

// What gpubundle makes itself rather than pulls.
enum class BuiltKind {
  DriverImage,  // a precompiled driver image, one per kernel (node-images/driver_image.hpp)
  NodeOverlay,  // a baked node overlay artifact (node-images/overlay_artifact.hpp)
  PackageRepo,  // the site package repository image (node-images/repo_image.hpp)
  ToolImage,    // the gpubundle image that build Jobs run (node-images/tool_image.hpp)
};

struct LockImage {
  std::vector<std::string> components;  // values keys, e.g. ["devicePlugin", "gfd"]
  std::string source;                   // full reference as pulled (or as built)
  std::vector<std::string> platforms;
  std::string destination;  // empty when the recipe has no destination
  std::string digest;       // manifest (or index) digest, "" until mirrored or built
  std::optional<BuiltKind> built;  // empty: origin "upstream", pulled by mirror
  std::string site_digest = {};  // the filtered index the site holds instead, "" when it holds `digest`

  bool upstream() const { return !built; }
  // What the site registry holds under the destination, and so what the kit pins.
  const std::string& at_site() const { return site_digest.empty() ? digest : site_digest; }
};

// An image this run made and stored, for record_built().
struct BuiltImage {
  BuiltKind kind = BuiltKind::DriverImage;
  std::string ref;
  std::string digest;    // manifest digest in the store
  std::string platform;  // e.g. "linux/amd64"
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

// The site package repository (see the header comment).
struct LockPackageRepo {
  std::string format;       // apt | rpm-md
  std::string fingerprint;  // 40 upper-case hex digits
  std::string public_key;   // ASCII-armoured OpenPGP public key
};

// The Network Operator (see the header comment).
struct LockNetwork {
  std::string version;  // release tag, "v26.4.1"
  LockChart chart;      // the network-operator chart
  std::string release_file;
  std::string release_sha256;
  std::vector<std::string> operands;
  std::string doca_version;  // "" without the ofedDriver operand
  bool doca_precompiled = false;
  // With the ibKubernetes operand: its GUID pool and UFM Secret (recipe network.ibKubernetes).
  std::string ib_pkey_guid_pool_start, ib_pkey_guid_pool_end, ib_ufm_secret;
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
  std::optional<LockPackageRepo> package_repo;
  std::optional<LockNetwork> network;
  std::vector<std::string> warnings;

  LockImage* find(const std::string& source);
  // The platforms an image travels with: its own, else the target's, else linux/amd64.
  std::vector<std::string> platforms_of(const LockImage& image) const;
  // The precompiled driver images of the recipe's kernels (driver.mode
  // precompiled), which `build --installer` makes instead of pulling.
  std::vector<LockImage*> precompiled_driver_images();
};

// The one way a built image enters a lock: replaces the entry of the same
// reference (keeping its components, platforms and destination) or adds one
// (its destination by the lock's rule), then marks it built with its digest.
// Images stay sorted by source.
void record_built(Lock& lock, const BuiltImage& image);
// "upstream" or "built", as the lock and the kit manifest write it.
const char* origin_word(const LockImage& image);

std::string lock_to_json(const Lock& lock);
Result<Lock> parse_lock(const std::string& text, const std::string& file);
Result<Lock> load_lock(const std::string& file);

}  // namespace gb::recipes
