#include "packages/names.hpp"

#include "common/strings.hpp"
#include "recipes/catalog.hpp"

namespace gb::packages {

std::string package_arch(const std::string& platform, recipes::PackageFormat format) {
  auto parts = split(platform, '/');  // linux/arm64/v8
  std::string arch = parts.size() >= 2 ? parts[1] : platform;
  if (format == recipes::PackageFormat::RpmMd) return arch == "amd64" ? "x86_64" : arch == "arm64" ? "aarch64" : arch;
  return arch;
}

std::vector<std::string> kernel_package_names(const recipes::PackageSettings& p, const std::string& os, const std::string& kernel) {
  std::vector<std::string> templates = p.kernel_packages;
  if (templates.empty()) {
    // What the conventional driver container installs at start.
    if (recipes::os_package_format(os) == recipes::PackageFormat::RpmMd) {
      // rhel8's script installs kernel-core; rhel9's (since 2025-04) and
      // rhel10's install `kernel`, whose closure holds kernel-core and the
      // kernel-modules with video.ko they load first: it serves both.
      auto [id, version] = recipes::split_os(os);
      const bool el8 = version == "8" || starts_with(version, "8.");
      templates = {"elfutils-libelf", "elfutils-libelf-devel", "kernel-headers-{kernel}", "kernel-devel-{kernel}",
                   el8 ? "kernel-core-{kernel}" : "kernel-{kernel}"};
    } else if (starts_with(os, "debian"))
      templates = {"linux-headers-{kernel}", "linux-image-{kernel}"};
    else
      templates = {"linux-headers-{kernel}", "linux-image-{kernel}", "linux-modules-{kernel}"};
  }
  for (auto& t : templates)
    for (size_t at; (at = t.find("{kernel}")) != std::string::npos;) t.replace(at, 8, kernel);
  return templates;
}

PackageNames doca_build_package_names(const std::string& os, const std::string& kernel) {
  if (recipes::os_package_format(os) == recipes::PackageFormat::RpmMd)
    return {{"kernel-" + kernel, "kernel-headers-" + kernel, "kernel-devel-" + kernel, "kernel-core-" + kernel,
             "kernel-modules-" + kernel, "gcc"},
            {"elfutils-libelf-devel", "kernel-rpm-macros", "numactl-libs", "lsof", "rpm-build", "patch", "hostname"}};
  return {{"pkg-config", "linux-headers-" + kernel}, {"linux-modules-extra-" + kernel}};
}

std::string kernel_compiler_package(recipes::PackageFormat format, std::string_view text) {
  // The version gcc prints last on its --version line: "... 12.3.0" (a date and
  // the vendor's release may follow it in parentheses on Red Hat's).
  auto gcc = text.find("gcc");
  if (gcc == std::string_view::npos) return "";
  std::string_view rest = text.substr(gcc);
  if (auto paren = rest.find(')'); paren != std::string_view::npos) rest = rest.substr(paren + 1);
  size_t at = rest.find_first_of("0123456789");
  if (at == std::string_view::npos) return "";
  size_t end = rest.find_first_not_of("0123456789.", at);
  std::string version(rest.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
  if (!is_dotted_number(version, 1, 3)) return "";
  if (format == recipes::PackageFormat::RpmMd) return "gcc-" + version;
  return "gcc-" + version.substr(0, version.find('.'));
}

}  // namespace gb::packages
