#pragma once
// Facts the chart does not carry: GPUs, driver branches, OS tag rules and
// component traits. The YAML in recipes/catalog/ is compiled into the binary.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::recipes {

struct GpuInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::string pci;                     // "10de:2335"
  std::vector<std::string> other_pcis;  // more device ids of the same model
  std::string architecture;
  int memory_gib = 0;
  int min_branch = 0;
  int max_branch = 0;         // 0: no limit
  std::string operator_from;  // first GPU Operator release that supports it, "" for all
  std::string min_version;  // empty: any version of min_branch
  bool open_modules_required = false;
  bool open_modules_unsupported = false;
  bool has_pci(std::string_view id) const;
  std::vector<std::string> mig_profiles;
};

struct ComponentInfo {
  std::string title;
  bool os_suffix = false;
  std::vector<std::string> workloads{"container"};
  std::string enabled_by;           // values path, e.g. gpuCluster.deployCR
  std::vector<std::string> images;  // extra image paths below the key, "*" for list items
  // When the operator runs it (components.yaml says where each fact comes from).
  std::string sandbox_mode;        // "kata" | "kubevirt" where the release has sandboxWorkloads.mode
  bool mig_capable = false;        // only on nodes with a MIG-capable GPU
  bool openshift = false;          // only on OpenShift
  std::string removed_in;          // first release that never deploys it
  bool gpu_cluster = false;        // part of the GPUCluster (DRA) stack
  std::string helm_rendered_from;  // Helm renders repository/image:version from this release on
};

// A NVIDIA Network Operator operand a recipe's network.operands names
// (recipes/catalog/network.yaml says what each field means).
struct NetworkPolicyImage {
  std::string path;     // NicClusterPolicy spec path: "secondaryNetwork.multus"
  std::string release;  // its key in the release's hack/release.yaml: "Multus"
};
struct NetworkOperand {
  std::string name;  // "ofedDriver"
  std::string title;
  std::vector<NetworkPolicyImage> policy;  // NicClusterPolicy operands
  std::string chart_switch;                // or a chart values switch: "nfd.enabled"
};

// The sandboxWorkloads.mode the install kit deploys VM workloads in, where
// the release has a mode (v26.3 on).
inline constexpr const char* k_sandbox_mode = "kubevirt";

// One entry of a mig-parted config: the GPUs it is limited to (empty: every
// GPU) and its MIG profile -> count (nullopt: MIG off).
struct MigLayoutEntry {
  std::vector<std::string> gpus;  // "10de:2330"
  std::optional<std::map<std::string, int>> devices;
};
using MigLayouts = std::map<std::string, std::vector<MigLayoutEntry>>;  // config name -> entries

struct OsTagRule {
  std::string from;                     // first operator version it applies to
  std::map<std::string, int> major_only;  // os id -> first major that drops the minor
};

// What driver.kernelModuleType auto comes to in a driver container
// (drivers.yaml says how the container decides).
struct AutoModuleType {
  std::string type;          // open | proprietary
  bool recommended = false;  // nvidia-installer's answer for the GPUs; false: the container's branch fallback
  std::string installer;     // who answers: "nvidia-installer 580.105.08", "the nvidia-installer of branch 580"
};

class Catalog {
public:
  static const Catalog& builtin();
  // For tests: a catalog from YAML texts keyed by file name.
  static Result<Catalog> from_files(const std::map<std::string, std::string>& files);

  // By name or alias (case-insensitive) or PCI id ("10de:2335", "0x233510DE").
  const GpuInfo* find_gpu(std::string_view name_or_pci) const;
  const std::vector<GpuInfo>& gpus() const { return m_gpus; }

  // The "-<osTag>" the given operator release appends for this OS.
  std::string os_tag(std::string_view operator_version, std::string_view os) const;
  // Why `os` cannot be the node OS for this release, "" when it can: a
  // major-only name ("rhel9") where the release tags with the full VERSION_ID.
  std::string os_name_problem(std::string_view operator_version, std::string_view os) const;
  // nullopt when the catalog has no support data for that operator series.
  std::optional<bool> os_supported(std::string_view operator_version, std::string_view os) const;
  bool precompiled_published(std::string_view os) const;

  // The default-mig-parted-config of this release (recipes/catalog/mig.yaml);
  // nullptr before the first release the catalog has.
  const MigLayouts* mig_layouts(std::string_view operator_version) const;
  // From this release on the MIG manager also generates all-<profile> and
  // all-balanced per node from the GPU's own profiles.
  bool mig_layouts_generated(std::string_view operator_version) const;

  std::vector<std::string> versions_in_branch(std::string_view branch) const;
  int auto_open_from_branch() const { return m_auto_open_from_branch; }
  const std::string& installer_recommends_from() const { return m_installer_recommends_from; }
  // auto for nodes with these GPUs and this driver. `version` may be empty
  // (a precompiled branch): the branch's newest known version stands in.
  // Without GPUs the installer's answer is unknown, so the branch decides.
  AutoModuleType auto_module_type(const std::vector<const GpuInfo*>& gpus, std::string_view version,
                                  std::string_view branch) const;
  // The driver branches this release's component matrix lists, ascending;
  // nullopt for a YY.MM series the catalog has no matrix for.
  std::optional<std::vector<int>> operator_driver_branches(std::string_view operator_version) const;
  // The first release after `operator_version` whose matrix lists `branch`, "" if none.
  std::string first_operator_with_branch(int branch, std::string_view operator_version) const;

  // nullptr for components the catalog does not know (found in a new chart).
  const ComponentInfo* component(std::string_view values_key) const;
  // Every component the catalog knows, by values key.
  const std::map<std::string, ComponentInfo, std::less<>>& components() const { return m_components; }

  // The Network Operator's operands, in catalog order; nullptr for an unknown name.
  const std::vector<NetworkOperand>& network_operands() const { return m_network_operands; }
  const NetworkOperand* network_operand(std::string_view name) const;
  const std::vector<std::string>& network_default_operands() const { return m_network_default_operands; }
  // The DOCA driver tag template ({version}, {os}, {kernel}, {arch}).
  const std::string& doca_driver_tag(bool precompiled) const { return precompiled ? m_doca_precompiled_tag : m_doca_tag; }

private:
  std::vector<GpuInfo> m_gpus;
  std::map<std::string, std::vector<std::string>> m_branches;
  int m_auto_open_from_branch = 560;
  std::string m_installer_recommends_from;
  std::vector<std::pair<std::string, std::vector<int>>> m_operator_branches;  // by release, ascending
  const OsTagRule* os_tag_rule(std::string_view operator_version) const;
  bool drops_minor(std::string_view operator_version, const std::string& id, const std::string& major) const;

  std::vector<OsTagRule> m_os_tag_rules;
  std::vector<std::pair<std::string, MigLayouts>> m_mig_layouts;  // by "from" release, ascending
  std::string m_mig_generated_from;
  std::vector<std::string> m_minor_versioned;
  std::map<std::string, std::vector<std::string>> m_os_support;
  std::vector<std::string> m_precompiled_published;
  std::map<std::string, ComponentInfo, std::less<>> m_components;
  std::vector<NetworkOperand> m_network_operands;
  std::vector<std::string> m_network_default_operands;
  std::string m_doca_tag, m_doca_precompiled_tag;
};

// The device's name in Debian's pci.ids ("GA102GL [A10G]"), "" when the
// file or the id is absent. `pci` as find_gpu takes it.
std::string pci_ids_name(std::string_view pci);

// "rhel9.4" -> {"rhel", "9.4"}, "sl-micro6.1" -> {"sl-micro", "6.1"}
std::pair<std::string, std::string> split_os(std::string_view os);

}  // namespace gb::recipes
