#pragma once
// The NVIDIA Network Operator's closure (recipe section `network`). Like the
// GPU Operator's, it comes from upstream data, so a new release needs no code:
//   - the network-operator chart's own values.yaml and its enabled subcharts
//     (the operator, its DOCA init container, NFD, the SR-IOV network
//     operator, the maintenance operator);
//   - the release's hack/release.yaml, the image of every NicClusterPolicy
//     operand, which the chart values do not carry; the catalog
//     (recipes/catalog/network.yaml) says which release.yaml key and which
//     NicClusterPolicy spec path each operand the recipe names has;
//   - the DOCA driver, whose tag the operator composes per node pool by the
//     catalog's rule: <version>-<os>-<arch>, precompiled
//     <version>-<kernel>-<os>-<arch>, one image per target platform (and
//     kernel).
// Lock images get components "network:<NicClusterPolicy spec path>"
// (release.yaml images: "network:ofedDriver", "network:secondaryNetwork.multus")
// or "network:<chart values path>" (chart images: "network:operator",
// "network:node-feature-discovery.image"); the catalog's policy paths and
// the chart's values paths do not overlap.

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "recipes/catalog.hpp"
#include "recipes/chart.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

namespace gb::recipes {

inline constexpr const char* k_network_chart = "network-operator";

// The RDMA resources the kit's NicClusterPolicy makes (kit_network.cpp writes
// the device plugins' configs from these): the shared device plugin prefixes
// its resourceName with its fixed "rdma/"; the SR-IOV device plugin takes the
// config's resourcePrefix.
inline constexpr const char* k_rdma_shared_operand = "rdmaSharedDevicePlugin";
inline constexpr const char* k_sriov_device_operand = "sriovDevicePlugin";
inline constexpr const char* k_rdma_shared_resource_name = "rdma_shared_device_a";
inline constexpr const char* k_sriov_resource_prefix = "nvidia.com";
inline constexpr const char* k_sriov_resource_name = "hostdev";
// The resource an RDMA pod asks for, from a lock's operands: the shared
// device plugin's when it is there (any pod may share it), else the SR-IOV
// device plugin's; "" without either. Inline: the lock reader needs it, and
// gpubundle-node, which links that, must not pull this file's chart code in.
inline std::string rdma_resource(const std::vector<std::string>& operands) {
  auto has = [&](const char* name) { return std::find(operands.begin(), operands.end(), name) != operands.end(); };
  if (has(k_rdma_shared_operand)) return std::string("rdma/") + k_rdma_shared_resource_name;
  if (has(k_sriov_device_operand)) return std::string(k_sriov_resource_prefix) + "/" + k_sriov_resource_name;
  return "";
}
inline constexpr std::string_view k_network_component_prefix = "network:";
bool is_network_component(std::string_view component);

// An image the network chart's values name, where the kit rewrites it.
struct NetworkChartImage {
  enum class Shape {
    RepositoryImage,  // {repository: host/path, image: name, version|tag}: the chart's own
    RepositoryName,   // {repository: host/path, name: name, tag}: maintenance operator
    FullRepository,   // {repository: host/path/name, tag}: NFD
    String,           // a reference string under an `images` map: SR-IOV network operator
  };
  std::string path;  // values path: "operator", "sriov-network-operator.images.operator"
  Shape shape = Shape::RepositoryImage;
  std::string reference;  // as the chart renders it
  std::string tag_key;    // "version" or "tag" where the values set the tag; "" when Helm takes appVersion
};

// The images of the chart and of the subcharts that `operands` (catalog
// names) turn on; a subchart no catalog operand switches follows its
// condition in the chart's values. An image without a tag or digest is left
// out with a line in `warnings`.
std::vector<NetworkChartImage> network_chart_images(const Chart& chart, const std::vector<std::string>& operands,
                                                    const Catalog& catalog, std::vector<std::string>& warnings);

// Adds the recipe's network closure to `lock` (images and lock.network).
// `release_text` is hack/release.yaml of the release, `release_file` where
// it was read from. Fails with one line per problem.
Result<void> resolve_network(const Recipe& recipe, const Chart& chart, const std::string& release_text,
                             const Catalog& catalog, Lock& lock);

}  // namespace gb::recipes
