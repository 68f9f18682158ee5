#pragma once
// The install kit: everything a site needs to install the GPU Operator from
// its own registry, made from a lock plus the chart it was resolved against.
// No registry is contacted. `gpubundle overrides`, `import` and `bundle create`
// all call make_kit(); docs/install-kit.md describes every file.
//
//   values.yaml                       Helm values for that exact chart version
//   install.sh                        helm upgrade --install (+ --dry-run)
//   verify.sh                         acceptance checks, PASS/FAIL lines
//   upgrade.sh                        helm upgrade to this kit, driver node by node, a canary first
//   mig.sh                            node labels for the recipe's MIG config (when set)
//   time-slicing.yaml                 device-plugin ConfigMap (when sharing is set)
//   alerts.yaml                       PrometheusRule on DCGM metrics
//   monitoring/gpu-alerts.rules.yaml  the same rules as a plain Prometheus rule file
//   monitoring/grafana-dashboard.json Grafana dashboard of those four signals, per node and per GPU
//   monitoring/grafana-dashboard-configmap.yaml   it, as a ConfigMap for the Grafana sidecar
//   acceptance/nccl-mpijob.yaml       NCCL all-reduce MPIJob across the GPU nodes (recipe acceptance.nccl;
//                                     kit_acceptance.cpp); its results: docs/acceptance-results.md
//   acceptance/nccl-allreduce.sh      runs it, parses all_reduce_perf, writes the results JSON (--parse LOG:
//                                     offline; --install-mpi-operator MANIFEST: the upstream manifest, image moved)
//   containerd/certs.d/<host>/hosts.toml   one per source registry host, plus the site
//   containerd/certs.d/<site>/ca.crt  the site's CA, when KitOptions::registry_ca is set
//   crio/registries.conf.d/99-gpubundle.conf   the source hosts and the site itself
//   crio/certs.d/<site>/ca.crt        the same CA, for /etc/containers/certs.d
//   package-repo.yaml                 the site package repository: repoConfig ConfigMap (sources
//                                     and key), CA ConfigMap, Deployment + Service (lock packageRepo)
//   network-operator-values.yaml      Helm values for the network-operator chart (lock network section)
//   nic-cluster-policy.yaml           NicClusterPolicy: the recipe's network operands, site images,
//                                     DOCA driver upgrades one node at a time with drain
//   network.sh                        installs the network-operator chart with those values, then
//                                     applies nic-cluster-policy.yaml and waits for it to be ready
//   manifest.json                     machine-readable install manifest (format below)
//   <chart>.tgz                       copied in by the caller when it has the archive (and the
//                                     network-operator chart's, for a lock with a network section)
//
// manifest.json (sorted keys, two-space indent, schemaVersion 1):
//   { "schemaVersion": 1, "generator": "gpubundle X", "bundleId": "" | id,
//     "registry": {host, prefix, layout: "strip-host"|"keep-host", plainHttp},
//     "chart": {name, version, appVersion, sha256, file},
//     "operator": {version},
//     "recipe": {name, sha256},
//     "target": {gpus[], os, osTag, kernels[], platforms[]},
//     "driver": {mode, version, branch, kernelModuleType, usePrecompiled},
//     "images": [{source, destination, digest, upstreamDigest, platforms[], components[], origin, size?}],
//     "files": [kit file paths] }
// images are in lock order (sorted by source); digest is what the site
// registry holds (the lock's siteDigest, else its digest), the one the values
// pin; upstreamDigest is the lock's digest; destination is the tag reference
// (or digest reference when the source has no tag); size appears only when the
// caller knows it (a bundle), never guessed.

#include <filesystem>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "common/error.hpp"
#include "recipes/chart.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"
#include "recipes/reference.hpp"

namespace gb::kit {

// --registry HOST[:PORT][/PREFIX], or http://HOST[:PORT][/PREFIX] for a
// plain-HTTP registry (https:// is accepted and is the default).
struct SiteRegistry {
  std::string host;    // "registry.site:5000"
  std::string prefix;  // "gpu" or "team/gpu", no slashes at either end
  bool plain_http = false;

  static Result<SiteRegistry> parse(std::string_view text);
  std::string str() const;  // host[/prefix]
  std::string url() const;  // https://host or http://host
};

enum class Layout { StripHost, KeepHost };
Result<Layout> parse_layout(std::string_view text);  // "strip-host" (default) | "keep-host"
std::string to_string(Layout layout);

// Where one source repository lands: <host>/<prefix>/<path without its host>,
// or with KeepHost <host>/<prefix>/<source host>/<path>. A port colon in the
// kept source host becomes "_" ("localhost:5000" -> "localhost_5000"), since a
// repository path cannot hold a colon.
recipes::Reference site_reference(const recipes::Reference& source, const SiteRegistry& site, Layout layout);

// One lock image placed on the site registry.
struct Placement {
  const recipes::LockImage* image = nullptr;
  recipes::Reference source;
  recipes::Reference destination;  // tag kept; digest added when the lock has one
};

// Fails when a source does not parse, or when two different source
// repositories would land on one destination repository (naming both).
Result<std::vector<Placement>> place_images(const recipes::Lock& lock, const SiteRegistry& site, Layout layout);

// The recipe settings the kit needs, read from the lock's recipe.spec.
struct KitRecipe {
  std::string toolkit_mode = "container";  // container | host
  struct Component {
    bool has_enabled = false;
    bool enabled = true;
    bool has_service_monitor = false;
    bool service_monitor = false;
  };
  std::map<std::string, Component> components;
  std::string mig_strategy;
  std::string mig_config;
  int time_slicing_replicas = 0;
  bool time_slicing_rename = false;
  std::vector<std::string> extra_images;
  std::string pull_secret;
  // acceptance.nccl (recipes/recipe.hpp NcclAcceptance), when the recipe has it.
  struct Nccl {
    int nodes = 2;
    int gpus_per_node = 8;
    std::string min_bytes = "8";
    std::string max_bytes = "8G";
    double min_bus_bw = 0;
    std::string network;  // NetworkAttachmentDefinition the workers attach; "" none
    bool mpi_operator_install = false;
  };
  std::optional<Nccl> nccl;
  // monitoring (recipes/recipe.hpp MonitoringLabels): defaults when the recipe has none.
  recipes::MonitoringLabels monitoring;
};
Result<KitRecipe> kit_recipe(const recipes::Lock& lock);

struct KitOptions {
  SiteRegistry registry;
  Layout layout = Layout::StripHost;
  std::string bundle_id;                       // "" outside a bundle
  std::map<std::string, uint64_t> image_sizes;  // source -> bytes, when known
  std::string namespace_name = "gpu-operator";
  // PEM of the CA that signed the site registry's certificate, when nodes do
  // not trust it already: the kit then carries it as ca.crt for containerd
  // and CRI-O and points the containerd config at it. Ignored for plain HTTP.
  std::string registry_ca;
  // The site package repository (a lock with packageRepo) is served in the
  // cluster by its image (Deployment + Service in package-repo.yaml), or,
  // with package_repo_url, by a server the site runs (then no Deployment):
  std::string package_repo_url;  // http(s)://host[:port]/path/ where the repository tree is served
  std::string package_repo_ca;   // PEM of the CA of an https package_repo_url (driver.certConfig)
  // The registry is `gpubundle serve` on registry.host (docs/serve.md): the
  // kit also carries serve/gpubundle-serve.service for the serving host,
  // serving these bundle volumes (file names) from /var/lib/gpubundle.
  bool serve = false;
  std::vector<std::string> serve_bundles;
  // The network-operator chart a lock's network section was resolved against
  // (mirror/chart_fetch.hpp lock_network_chart): required for such a lock.
  const recipes::Chart* network_chart = nullptr;
};

struct KitFile {
  std::string path;  // relative to the kit folder
  std::string content;
  int mode = 0644;
};

struct Kit {
  std::vector<KitFile> files;  // sorted by path
  const KitFile* find(std::string_view path) const;
};

// Names used inside the kit and the cluster.
constexpr const char* k_time_slicing_configmap = "time-slicing-config";
constexpr const char* k_time_slicing_key = "any";
constexpr const char* k_release_name = "gpu-operator";
// The site package repository's Deployment/Service, its repoConfig and certConfig ConfigMaps.
constexpr const char* k_package_repo_name = "gpubundle-package-repo";
constexpr const char* k_package_repo_config_map = "gpubundle-repo-config";
constexpr const char* k_package_repo_ca_config_map = "gpubundle-repo-ca";
// Where the operator mounts the repoConfig ConfigMap (gpu-operator-facts §4.3).
constexpr const char* k_apt_repo_config_dir = "/etc/apt/sources.list.d";
constexpr const char* k_rpm_repo_config_dir = "/etc/yum.repos.d";
// The certConfig key, and where both operators mount it on RHEL, whose driver
// scripts never run update-ca-trust: the .repo file names it (sslcacert=).
constexpr const char* k_package_repo_ca_key = "gpubundle-repo-ca.crt";
constexpr const char* k_rpm_ca_dir = "/etc/pki/ca-trust/extracted/pem";

// The chart archive name install.sh expects next to it ("gpu-operator-v26.7.0.tgz").
std::string kit_chart_file(const recipes::Lock& lock);

Result<Kit> make_kit(const recipes::Lock& lock, const recipes::Chart& chart, const KitOptions& options);

// Writes every file into dir (created when missing), each atomically.
Result<void> write_kit(const Kit& kit, const std::filesystem::path& dir);

// --- values.yaml ---------------------------------------------------------

// values.yaml text. Fails, naming each key, when a key it would write is
// missing from the chart's values (and is no documented exception), or when
// the lock names a component the chart does not have.
Result<std::string> make_values_yaml(const recipes::Lock& lock, const recipes::Chart& chart, const KitOptions& options);

// Keys the kit writes although the chart's values.yaml does not carry them,
// each with the reason the chart still reads it.
struct KeyException {
  const char* path;
  const char* reason;
};
const std::vector<KeyException>& values_key_exceptions();

// Dotted leaf paths of a values tree ("driver.manager.repository"); lists are leaves.
std::vector<std::string> leaf_paths(const YAML::Node& values);
// True when the path exists in the chart's values (node-feature-discovery.*
// is looked up in that subchart's values).
bool chart_has_key(const recipes::Chart& chart, std::string_view path);
// Every leaf path of `values` that is neither in the chart nor an exception.
std::vector<std::string> unknown_keys(const YAML::Node& values, const recipes::Chart& chart);

}  // namespace gb::kit
