#pragma once
// What both artifacts (the precompiled driver image and the baked node
// overlay) are made of: an extracted installer, modules built and checked per
// target kernel, optionally signed, plus the installer's userspace files at
// their manifest destinations.
//
// Work happens in a sandbox folder (TMPDIR/gpubundle-driver.XXXXXX), removed
// on success and kept on failure so that make.log can be read. The signing
// key is read only by ModuleSigner (signing/module_sign.hpp); only the
// certificate (fingerprint, subject, DER) leaves this module.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "node-images/installer.hpp"
#include "node-images/kbuild.hpp"
#include "node-images/layer.hpp"
#include "recipes/recipe.hpp"

namespace gb::node_images {

struct DriverInputs {
  std::filesystem::path installer;                 // .run or extracted folder
  std::vector<std::filesystem::path> kernel_builds;  // --kernel-build
  std::vector<std::filesystem::path> kernel_headers;  // --kernel-headers (.deb), or fetched (kernel_packages.hpp)
  std::filesystem::path sign_key;
  std::filesystem::path sign_cert;
  int jobs = 0;                                     // 0: number of CPUs
  std::string module_type;                          // "" = from the recipe
  bool keep_sandbox = false;
};

struct SignerInfo {
  std::string fingerprint;  // sha256 of the certificate DER
  std::string subject;
  std::string common_name;
  std::string certificate_der;
};

struct KernelModules {
  std::string kernel;
  std::vector<BuiltModule> modules;  // file = the signed copy when signing
};

struct PreparedDriver {
  Installer installer;
  std::string module_type;  // open | proprietary
  std::vector<KernelModules> kernels;
  std::optional<SignerInfo> signer;
  std::filesystem::path sandbox;
  bool keep_sandbox = false;
  ~PreparedDriver();
  PreparedDriver() = default;
  PreparedDriver(PreparedDriver&&) noexcept;
  PreparedDriver& operator=(PreparedDriver&&) = delete;
  PreparedDriver(const PreparedDriver&) = delete;
};

// The checks of `in` that need no work: key and certificate given together,
// the installer present. prepare_driver() makes them first; callers that
// fetch before it (kernel_packages.hpp) make them before fetching.
Result<void> check_driver_inputs(const DriverInputs& in);

// Checks the inputs (key without cert and the like) before any work, then
// extracts, builds, checks vermagic and signs, for every recipe kernel.
Result<std::unique_ptr<PreparedDriver>> prepare_driver(const recipes::Recipe& recipe, const DriverInputs& in);

// ARCH of an installer named NVIDIA-Linux-ARCH-VERSION[...].run (ARCH is
// [A-Za-z0-9_]+, VERSION starts with a digit or '.'); "" for other names.
std::string installer_arch(std::string_view file_name);

// "auto" resolved as the resolver pins it in the lock: the driver
// container's rule for the recipe's GPUs and driver (Catalog::auto_module_type),
// a host driver's by its branch. `version` is the installer's.
std::string effective_module_type(const recipes::Recipe& recipe, const std::string& type, const std::string& version);
std::string driver_branch(const std::string& version);  // "580.95.05" -> "580"

inline constexpr const char* k_libdir = "usr/lib/x86_64-linux-gnu";

// Userspace files (libs, binaries, symlinks) at their manifest destinations.
// Firmware goes below firmware_dir ("lib/firmware/nvidia/<ver>" on a host,
// "opt/lib/firmware/nvidia/<ver>" in an image). Returns what was added.
Result<std::vector<std::string>> add_userspace(LayerBuilder& layer, const Installer& installer, const std::string& firmware_dir);

// The modules of one kernel into `dir` (e.g. lib/modules/<k>/updates/nvidia).
void add_modules(LayerBuilder& layer, const KernelModules& km, const std::string& dir);

// Runs `depmod -b` for one kernel over the modules in a scratch root and adds
// its output (modules.dep, .bin files...) under <modules_root>/<k>/.
// module_dir is relative to the kernel's folder (kernel/drivers/video).
Result<void> add_depmod_output(LayerBuilder& layer, const KernelModules& km, const std::string& module_dir,
                               const std::filesystem::path& scratch, const std::string& modules_root = "lib/modules");

// The nvidia-driver entrypoint script, embedded at build time.
const std::string& nvidia_driver_script();
const std::string& node_install_script();

}  // namespace gb::node_images
