#pragma once
// `gpubundle node-image bake`: a root filesystem overlay for node images
// with a preinstalled driver (driver.enabled=false; contract doc §4).
//
// Output folder:
//   overlay.tar     deterministic tar (node-images/layer.hpp) holding
//                     lib/modules/<k>/updates/nvidia/<m>.ko   (signed when asked)
//                     etc/modprobe.d/nvidia.conf              blacklist nouveau + options
//                     etc/modules-load.d/nvidia.conf          nvidia nvidia-uvm nvidia-modeset
//                     usr/lib/x86_64-linux-gnu/..., usr/bin/nvidia-smi ...  (manifest destinations)
//                     lib/firmware/nvidia/<ver>/gsp_*.bin
//                     etc/ld.so.conf.d/nvidia.conf
//                     usr/lib/systemd/system/nvidia-persistenced.service
//                     usr/share/gpubundle/mok/module-signing.der   (when signed)
//                     etc/containerd/conf.d/99-nvidia.toml     (toolkit mode host)
//   install.sh      --root DIR: unpack, depmod -b, ldconfig -r, systemctl --root enable, MOK step
//   manifest.json   {"schemaVersion":1, "driver":{version,branch,moduleType}, "kernels":[...],
//                    "packages": [file names], "units": [systemd units install.sh enables],
//                    "signer": {fingerprint, subject} | null, "installer": {source, sha256},
//                    "overlay": {file, sha256, size}, "files": [{path,type,mode,size,sha256,link}]}
//   values.yaml     Helm values fragment: driver.enabled=false (+ toolkit.enabled=false for host toolkit)
//   packages/       .deb/.rpm files install.sh installs into the root (dpkg --root / rpm --root;
//                   their names are written into install.sh, and listed in manifest.json "packages"):
//                   --toolkit-packages DIR/*, and --fabric-manager-packages DIR/* (each must carry
//                   the driver's version in its file name: FM refuses to run against another driver)
//
// With --fabric-manager, install.sh enables nvidia-fabricmanager.service; without FM packages the
// overlay carries our own unit for it (ExecStart /usr/bin/nv-fabricmanager) and install.sh says
// that the nv-fabricmanager binary is still missing. The bake output folder is also stored as an
// OCI artifact (node-images/overlay_artifact.hpp).

#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "node-images/driver_files.hpp"
#include "recipes/recipe.hpp"

namespace gb::node_images {

struct BakeOptions {
  std::filesystem::path output;
  std::filesystem::path toolkit_packages;
  std::filesystem::path fabric_manager_packages;
  bool fabric_manager = false;  // implied by fabric_manager_packages
};

struct BakeResult {
  std::filesystem::path overlay;
  std::string overlay_sha256;
  std::size_t files = 0;
  std::vector<std::string> packages;  // file names under packages/
};

// The package folders, checked before any build (driver_version "" skips the
// fabric manager version check, done again by bake_node_overlay).
// A .deb or .rpm file name safe to copy and to name in scripts:
// [A-Za-z0-9][A-Za-z0-9._+~-]*\.(deb|rpm)
bool is_package_file_name(std::string_view name);

Result<void> check_bake_options(const BakeOptions& options, const std::string& driver_version);

Result<BakeResult> bake_node_overlay(const recipes::Recipe& recipe, const PreparedDriver& driver, const BakeOptions& options);

}  // namespace gb::node_images
