#pragma once
// What a GPU node says about itself through files: NVIDIA PCI functions in
// sysfs, the loaded kernel module (/proc/driver/nvidia/version,
// /sys/module/nvidia/version), os-release, device nodes, processes and the
// nvidia.ko on disk. Everything is read below a root folder ("/" on a live
// node) so that tests use a fake tree. Reading never fails: what is absent
// stays empty, and the checks turn that into SKIP or FAIL with a reason.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gb::node {

struct PciFunction {
  std::string address;  // "0000:3b:00.0"
  std::string pci_id;   // "10de:2335"
};

struct ModuleFile {
  std::string path;      // as found below the root
  std::string vermagic;  // from .modinfo, e.g. "6.8.0-45-generic SMP preempt mod_unload"
  std::string version;   // from .modinfo
  bool compressed = false;
  bool signed_module = false;
  std::string problem;   // why it could not be read
};

struct NodeFacts {
  std::filesystem::path root;
  std::vector<PciFunction> gpus;  // display and 3D controllers of vendor 10de
  int nvswitches = 0;             // NVIDIA bridge functions (NVSwitch)
  std::string os;                 // as the operator names it: ID + VERSION_ID, "ubuntu24.04"
  std::string kernel;             // uname -r
  std::string kernel_problem;     // why the root's kernel release was not used ("" when it was)
  std::string platform;           // "linux/amd64"
  std::string proc_version;       // first line of /proc/driver/nvidia/version, "" without a driver
  std::string module_version;     // /sys/module/nvidia/version
  std::optional<bool> open_module;  // from proc_version: "Open Kernel Module"
  std::vector<std::string> device_nodes;  // /dev entries named nvidia*
  std::vector<std::string> cap_nodes;     // /dev/nvidia-caps/*
  std::vector<std::string> processes;     // comm of every visible process
  std::optional<ModuleFile> module_file;  // nvidia.ko for the running kernel
};

NodeFacts read_node_facts(const std::filesystem::path& root);

// The .modinfo fields of an ELF kernel module; empty when `elf` is not one.
std::vector<std::pair<std::string, std::string>> modinfo_fields(const std::string& elf);
// The same from a file of file_size bytes read by parts, read(offset, n) giving
// at most n bytes: only the header, section table, .shstrtab and .modinfo are
// read, each at most 1 MiB.
std::vector<std::pair<std::string, std::string>> modinfo_fields(const std::function<std::string(std::uint64_t, std::size_t)>& read,
                                                                std::uint64_t file_size);

}  // namespace gb::node
