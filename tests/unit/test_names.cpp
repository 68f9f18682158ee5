// packages/names.hpp: what a node's driver container or DOCA build installs
// for a kernel, as the upstream scripts name it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "packages/names.hpp"

using namespace gb;
using namespace gb::recipes;

TEST_CASE("package names: the driver container's and the DOCA build's packages for a kernel") {
  PackageSettings none;
  CHECK(packages::kernel_package_names(none, "ubuntu24.04", "6.8.0-49-generic") ==
        std::vector<std::string>{"linux-headers-6.8.0-49-generic", "linux-image-6.8.0-49-generic",
                                 "linux-modules-6.8.0-49-generic"});
  CHECK(packages::kernel_package_names(none, "debian12", "6.1.0-57-amd64") ==
        std::vector<std::string>{"linux-headers-6.1.0-57-amd64", "linux-image-6.1.0-57-amd64"});
  // What rhelN/nvidia-driver installs: kernel-core on 8, kernel (with kernel-core and kernel-modules) from 9 on.
  CHECK(packages::kernel_package_names(none, "rhel9.4", "5.14.0-427.13.1.el9_4.x86_64") ==
        std::vector<std::string>{"elfutils-libelf", "elfutils-libelf-devel", "kernel-headers-5.14.0-427.13.1.el9_4.x86_64",
                                 "kernel-devel-5.14.0-427.13.1.el9_4.x86_64", "kernel-5.14.0-427.13.1.el9_4.x86_64"});
  CHECK(packages::kernel_package_names(none, "rhel10", "6.12.0-55.9.1.el10_0.x86_64").back() == "kernel-6.12.0-55.9.1.el10_0.x86_64");
  CHECK(packages::kernel_package_names(none, "rhel8.10", "4.18.0-553.el8_10.x86_64") ==
        std::vector<std::string>{"elfutils-libelf", "elfutils-libelf-devel", "kernel-headers-4.18.0-553.el8_10.x86_64",
                                 "kernel-devel-4.18.0-553.el8_10.x86_64", "kernel-core-4.18.0-553.el8_10.x86_64"});
  CHECK(packages::kernel_package_names(none, "rocky8", "4.18.0-553.el8_10.x86_64").back() == "kernel-core-4.18.0-553.el8_10.x86_64");

  // The DOCA driver's build on the node (doca-driver-build entrypoint.sh).
  auto doca_ubuntu = packages::doca_build_package_names("ubuntu22.04", "5.15.0-122-generic");
  CHECK(doca_ubuntu.required == std::vector<std::string>{"pkg-config", "linux-headers-5.15.0-122-generic"});
  CHECK(doca_ubuntu.optional == std::vector<std::string>{"linux-modules-extra-5.15.0-122-generic"});
  auto doca_rhel = packages::doca_build_package_names("rhel9.6", "5.14.0-570.12.1.el9_6.x86_64");
  CHECK(doca_rhel.required.front() == "kernel-5.14.0-570.12.1.el9_6.x86_64");
  CHECK(std::find(doca_rhel.required.begin(), doca_rhel.required.end(), "kernel-modules-5.14.0-570.12.1.el9_6.x86_64") !=
        doca_rhel.required.end());
  CHECK(std::find(doca_rhel.optional.begin(), doca_rhel.optional.end(), "elfutils-libelf-devel") != doca_rhel.optional.end());

  // The compiler a node installs, from the kernel's CONFIG_CC_VERSION_TEXT.
  CHECK(packages::kernel_compiler_package(PackageFormat::RpmMd, "\"gcc (GCC) 11.5.0 20240719 (Red Hat 11.5.0-5)\"") == "gcc-11.5.0");
  CHECK(packages::kernel_compiler_package(PackageFormat::Apt, "\"x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0\"") == "gcc-12");
  CHECK(packages::kernel_compiler_package(PackageFormat::Apt, "\"gcc-12 (Debian 12.2.0-14) 12.2.0\"") == "gcc-12");
  CHECK(packages::kernel_compiler_package(PackageFormat::Apt, "\"Ubuntu clang version 18.1.3 (1ubuntu1)\"").empty());
  CHECK(packages::kernel_compiler_package(PackageFormat::RpmMd, "\"gcc (GCC)\"").empty());
  CHECK(packages::package_arch("linux/amd64", PackageFormat::Apt) == "amd64");
  CHECK(packages::package_arch("linux/amd64", PackageFormat::RpmMd) == "x86_64");
  CHECK(packages::package_arch("linux/arm64/v8", PackageFormat::RpmMd) == "aarch64");
}
