#pragma once
// Building the NVIDIA kernel modules from an extracted installer against one
// kernel's build tree, and checking what came out.
//
// The build runs `make -C <copy of kernel-open|kernel> modules SYSSRC=<tree>
// -j N` in a sandbox copy, so the extracted installer stays pristine and two
// kernels never share objects. Its output goes to <sandbox>/make.log; on
// failure the error names the command and carries the log's last lines.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "node-images/installer.hpp"

namespace gb {
class CommandRunner;
}

namespace gb::node_images {

// A kernel build tree (what /lib/modules/<kver>/build points at).
struct KernelTree {
  std::filesystem::path dir;
  std::string release;  // from include/config/kernel.release
};

Result<KernelTree> open_kernel_tree(const std::filesystem::path& dir);

// Unpacks header packages into `sandbox` (unpack.hpp: nothing resolves
// outside it) and returns the tree(s) found (one per kernel release):
// Debian/Ubuntu linux-headers-<kver>*.deb with the -common/-kbuild packages
// they need (usr/src/*), or RHEL kernel-devel-<kver>.rpm (usr/src/kernels/*).
Result<std::vector<KernelTree>> unpack_kernel_headers(const std::vector<std::filesystem::path>& debs,
                                                      const std::filesystem::path& sandbox);

// `.modinfo` of an ELF module: key -> value (first occurrence).
Result<std::map<std::string, std::string>> read_modinfo(std::string_view elf, const std::string& source);

// "6.1.0-57-amd64 SMP preempt mod_unload modversions " -> "6.1.0-57-amd64"
std::string vermagic_release(const std::string& vermagic);

struct ModuleBuildOptions {
  std::string module_type = "open";  // open -> kernel-open/, proprietary -> kernel/
  int jobs = 2;
  std::string target_release;        // the recipe's kernel; vermagic must match it
  CommandRunner* runner = nullptr;   // starts make; null: system_runner()
};

struct BuiltModule {
  std::string name;  // nvidia-uvm
  std::filesystem::path file;
  std::string vermagic;
};

// Builds and checks every module named on manifest line 4.
Result<std::vector<BuiltModule>> build_modules(const Installer& installer, const KernelTree& tree,
                                               const std::filesystem::path& sandbox, const ModuleBuildOptions& options);

// Runs argv with stdout+stderr appended to `log`; returns the exit status.
// Exposed for depmod/ldconfig callers that want the same capture.
Result<int> run_logged(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                       const std::filesystem::path& log, CommandRunner* runner = nullptr);
std::string tail_lines(const std::filesystem::path& file, int n);

}  // namespace gb::node_images
