#pragma once
// The package-name rules: which packages a node's driver container or DOCA
// build installs for a kernel, as the upstream scripts name them, and how a
// format spells an architecture: what the build fetches for the site.

#include <string>
#include <string_view>
#include <vector>

#include "recipes/recipe.hpp"

namespace gb::packages {

// The packages a node's GPU driver container installs for `kernel` on `os`:
// templates filled, or what the driver image's own script installs
// (gpu-driver-container rhelN/ubuntuNN nvidia-driver). The compiler, which the
// RHEL scripts install at the kernel's own gcc version, comes on top
// (kernel_compiler_package(), from the kernel headers' .config).
std::vector<std::string> kernel_package_names(const recipes::PackageSettings& p, const std::string& os, const std::string& kernel);

// What the DOCA driver's build on the node installs (doca-driver-build
// entrypoint.sh: the kernel's packages and build tools; `optional` ones it
// installs only where the repositories have them). The compiler comes on top.
struct PackageNames {
  std::vector<std::string> required;
  std::vector<std::string> optional;
};
PackageNames doca_build_package_names(const std::string& os, const std::string& kernel);

// The compiler package a node installs for a kernel built by `cc_version_text`
// (the headers' CONFIG_CC_VERSION_TEXT, "gcc (GCC) 11.5.0 20240719 (Red Hat
// 11.5.0-5)" or "x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0"):
// rpm-md "gcc-11.5.0" (the RHEL driver script's dnf install gcc-<x.y.z>), apt
// "gcc-12" (the DOCA build's apt-get install gcc-<major>); "" when the text names no gcc.
std::string kernel_compiler_package(recipes::PackageFormat format, std::string_view cc_version_text);

// A platform's architecture as `format` spells it: linux/amd64 -> amd64 (apt), x86_64 (rpm-md).
std::string package_arch(const std::string& platform, recipes::PackageFormat format);

}  // namespace gb::packages
