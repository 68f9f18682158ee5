#pragma once
// The recipe: what a site runs (GPUs, OS, kernels), which GPU Operator release
// it wants and how the driver gets onto the nodes. Format: docs/recipe.md.
//
//   apiVersion: gpubundle/v1
//   kind: Recipe
//   metadata: {name}
//   operator: {version, chart}
//   target: {gpus[], os, kernels[], platforms[], workloads[]}
//   driver: {mode, version | branch, kernelModuleType}
//   toolkit: {mode}
//   components: {<values key>: {enabled, serviceMonitor}}
//   mig: {strategy, config}
//   sharing: {timeSlicing: {replicas, renameByDefault}}
//   extraImages[]
//   destination: {registry, prefix}
//   pullSecret
//   packages: {sources[]: {name, type, url, suites[], components[], keyring, caFile, signatures},
//              kernelPackages[], server: {image}}
//   network: {version, chart, releaseFile, operands[], ofedDriver: {precompiled},
//             ibKubernetes: {pKeyGUIDPoolRangeStart, pKeyGUIDPoolRangeEnd, ufmSecret}}
//   acceptance: {nccl: {image, nodes, gpusPerNode, minBytes, maxBytes, minBusBw, network,
//                       mpiOperator: {install, image}}}
//   monitoring: {prometheusLabels: {KEY: VALUE}, dashboardLabels: {KEY: VALUE}}
//
// Unknown fields are errors that name the field path and the line.
// A key written twice in one mapping is an error too (recipes/yaml_input.hpp).
//
// Limits, checked before the text is parsed or a value is kept; a recipe is a
// short hand-written file:
//   file              k_recipe_max_bytes  (1 MiB)
//   any one value     k_recipe_max_string (4096 bytes)
//   any list or map   k_recipe_max_list   (1024 entries: gpus, kernels, extraImages, components ...)
//   metadata.name and pullSecret  k_recipe_max_name (253, a Kubernetes name)

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::recipes {

enum class DriverMode { Conventional, Precompiled, Host };
enum class ToolkitMode { Container, Host };

constexpr size_t k_recipe_max_bytes = 1 << 20;
constexpr size_t k_recipe_max_string = 4096;
constexpr size_t k_recipe_max_list = 1024;
constexpr size_t k_recipe_max_name = 253;

// The shapes of recipe values; the lock (recipes/lock.hpp) checks the same.
bool is_recipe_name(std::string_view s);     // [a-z0-9]([-a-z0-9.]*[a-z0-9])?: metadata.name, pullSecret
bool is_release_tag(std::string_view s);     // v24.9.2: operator.version
bool is_os_name(std::string_view s);         // [a-z]+N(.N)?: ubuntu22.04, rhel9
bool is_kernel_release(std::string_view s);  // N.N[A-Za-z0-9._+~-]*: 5.15.0-122-generic
bool is_driver_version(std::string_view s);  // N.N(.N)? or sha256:<64 hex>
bool is_driver_branch(std::string_view s);   // three digits: 550
// A Kubernetes label: "" when key and value are well formed, else why not.
// Key [prefix/]name (prefix a DNS subdomain, name 1-63 of [A-Za-z0-9._-],
// alphanumeric at both ends); value empty or like a name.
std::string label_problem(std::string_view key, std::string_view value);
// all_reduce_perf's -b/-e: digits with an optional K, M or G (powers of 1024).
bool is_nccl_size(std::string_view s);
// A NetworkAttachmentDefinition as Multus's pod annotation names it:
// [namespace/]name, namespace a DNS label, name like is_recipe_name.
bool is_network_attachment(std::string_view s);

std::string to_string(DriverMode m);
std::string to_string(ToolkitMode m);

// A signed package repository the build machine reads kernel packages from.
// apt: <url>/dists/<suite>/InRelease (or Release + Release.gpg), then
// <component>/binary-<arch>/Packages. rpm-md: <url>/<repo>/repodata/repomd.xml
// and repomd.xml.asc for each entry of `suites` (the repos; none: url itself).
enum class PackageFormat { Apt, RpmMd };
std::string to_string(PackageFormat f);  // apt | rpm-md

struct PackageSource {
  std::string name;  // a label for messages and file names: [a-z0-9-]
  PackageFormat format = PackageFormat::Apt;
  std::string url;                      // http(s)://... without a trailing slash
  std::vector<std::string> suites;      // apt suites (jammy, jammy-updates); rpm-md repos below url
  std::vector<std::string> components;  // apt only: main, universe
  std::filesystem::path keyring;        // OpenPGP public keys; relative paths start at the recipe's folder
  std::filesystem::path ca_file;        // optional: CA bundle for an https url
  // rpm-md only. Red Hat's CDN, Fedora and EPEL sign each rpm but publish no
  // repomd.xml.asc: with `signatures: packages` every rpm's own signature is
  // checked against the keyring instead (an .asc that is there still must verify).
  bool package_signatures = false;
};

struct PackageSettings {
  std::vector<PackageSource> sources;
  // Package names with "{kernel}" for the kernel release; empty: the OS
  // family's default (packages/names.hpp kernel_package_names()).
  std::vector<std::string> kernel_packages;
  std::string server_image;  // the HTTP server image the site repository is served from
};

struct Recipe;
// True when the recipe's DOCA driver builds on each node (network.operands has
// ofedDriver, not precompiled): it installs packages there.
bool doca_builds_on_node(const Recipe& r);
// True when the bundle carries a site package repository: a conventional GPU
// driver or a DOCA driver built on the node, with packages.sources.
bool wants_site_packages(const Recipe& r);
// Debian/Ubuntu (apt) or RHEL family (rpm-md), from the OS name.
PackageFormat os_package_format(const std::string& os);

// The NVIDIA Network Operator next to the GPU Operator (recipes/network.hpp).
struct NetworkSettings {
  std::string version;  // release tag, "v26.4.1"
  std::string chart;    // as operator.chart: path, https:// Helm repo or oci://
  // The release's image list (hack/release.yaml): a path (relative to the
  // recipe's folder) or an https:// URL; default: the release tag's file on GitHub.
  std::string release_file;
  std::vector<std::string> operands;  // catalog names (recipes/catalog/network.yaml), in recipe order
  bool doca_precompiled = false;      // ofedDriver.precompiled: one DOCA driver image per kernel
  // ibKubernetes: what its CRD requires and only the site knows (the UFM's GUID
  // pool and the Secret holding the UFM's credentials).
  struct IbKubernetes {
    std::string pkey_guid_pool_start;  // pKeyGUIDPoolRangeStart, "02:00:00:00:00:00:00:00"
    std::string pkey_guid_pool_end;    // pKeyGUIDPoolRangeEnd
    std::string ufm_secret;            // a Secret in the Network Operator's namespace
  };
  std::optional<IbKubernetes> ib_kubernetes;
};

// A GUID as the Network Operator's webhook reads one: eight hex pairs joined by ':'.
bool is_pkey_guid(std::string_view s);
// Where GUID pools compare: as 64-bit numbers.
std::uint64_t pkey_guid_value(std::string_view guid);

// acceptance.nccl: the NCCL all-reduce acceptance job the kit writes
// (kit/kit_acceptance.cpp, docs/install-kit.md). Its image is carried in the
// bundle (lock component "ncclTests"), and so is the Kubeflow MPI Operator's
// when mpiOperator.install is true ("mpiOperator").
struct NcclAcceptance {
  std::string image;      // nccl-tests: all_reduce_perf built with MPI, mpirun and sshd (required)
  int nodes = 2;          // GPU nodes the job spans: one MPI worker each
  int gpus_per_node = 8;  // GPUs each worker asks for, one rank per GPU
  std::string min_bytes = "8";   // all_reduce_perf -b and -e, as it reads them (N, NK, NM, NG)
  std::string max_bytes = "8G";
  double min_bus_bw = 0;  // GB/s the "Avg bus bandwidth" must reach; 0: no bound
  // The secondary network the workers attach (Multus annotation), made by the
  // site (MacvlanNetwork, HostDeviceNetwork, ...): only with a network section,
  // which makes the run a fabric acceptance (docs/install-kit.md).
  std::string network;
  bool mpi_operator_install = false;
  std::string mpi_operator_image;  // with install: default k_default_mpi_operator_image (recipes/lock.hpp)
};

// The labels the site's monitoring selects on (docs/install-kit.md). The
// defaults are kube-prometheus-stack's: its Prometheus picks PrometheusRules
// and ServiceMonitors labelled release=<its release name>, its Grafana
// sidecar ConfigMaps labelled grafana_dashboard=1.
inline constexpr std::size_t k_max_labels = 16;
struct MonitoringLabels {
  std::map<std::string, std::string> prometheus{{"release", "kube-prometheus-stack"}};
  std::map<std::string, std::string> dashboard{{"grafana_dashboard", "1"}};
};

struct ComponentOverride {
  std::optional<bool> enabled;
  std::optional<bool> service_monitor;  // dcgmExporter only
};

struct Recipe {
  std::filesystem::path file;  // where it was read from; relative chart paths start here
  std::string name;

  std::string operator_version;  // "v24.9.2"
  std::string chart;             // path, https:// Helm repo URL or oci:// reference

  std::vector<std::string> gpus;       // as written: catalog names or PCI ids
  std::string os;                      // "ubuntu22.04"
  std::vector<std::string> kernels;    // uname -r of the GPU nodes
  std::vector<std::string> platforms;  // "linux/amd64"
  std::vector<std::string> workloads;  // container | vm-passthrough | vm-vgpu

  DriverMode driver_mode = DriverMode::Conventional;
  std::string driver_version;  // full version or "sha256:..." digest
  std::string driver_branch;
  std::string kernel_module_type = "auto";  // auto | open | proprietary

  ToolkitMode toolkit_mode = ToolkitMode::Container;
  std::map<std::string, ComponentOverride> components;

  std::string mig_strategy;  // single | mixed, empty: chart default
  std::string mig_config;    // e.g. all-1g.10gb
  int time_slicing_replicas = 0;
  bool time_slicing_rename = false;

  std::vector<std::string> extra_images;
  std::string destination_registry;  // host[:port]
  std::string destination_prefix;
  bool destination_plain_http = false;  // registry given as http://host[:port]
  std::string pull_secret;
  PackageSettings packages;
  std::optional<NetworkSettings> network;
  std::optional<NcclAcceptance> nccl_acceptance;
  std::optional<MonitoringLabels> monitoring;  // the recipe's monitoring section, defaults filled

  // "driver.version" -> 14: lets later checks point at the recipe line.
  std::map<std::string, int> lines;

  // "recipe.yaml:14: " for a field, "recipe.yaml: " when the field is absent.
  std::string where(const std::string& field) const;
};

Result<Recipe> parse_recipe(const std::string& text, const std::filesystem::path& file);
Result<Recipe> load_recipe(const std::filesystem::path& file);

}  // namespace gb::recipes
