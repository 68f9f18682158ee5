#pragma once
// A kernel's header packages for building driver modules, fetched from the
// recipe's `packages.sources` (packages/packages.hpp: signed indexes, hashes)
// and named in the store by an OCI artifact over their blobs, so a second
// build of the same kernel needs no network and the bytes stay checked:
//
//   manifest  application/vnd.oci.image.manifest.v1+json
//     artifactType  application/vnd.gpubundle.kernel-packages.v1
//     config        the empty descriptor
//     layers        one per package file, sorted by name, titled
//                   (org.opencontainers.image.title) with its file name:
//                   application/vnd.debian.binary-package or application/x-rpm,
//                   annotated io.gpubundle.package = "<name> <version> <arch>"
//                   and io.gpubundle.package.origin = the recipe source's name
//     annotations   org.opencontainers.image.created (SOURCE_DATE_EPOCH or 0),
//                   io.gpubundle.kernel = the kernel release
//
// Reference: localhost/gpubundle/kernel-packages:<kernel> (the kernel
// release is tag-safe: recipes/recipe.cpp checks it for precompiled mode).
// It is a build-machine cache, not in the lock: nodes never need headers in
// precompiled mode, so bundles do not carry them.
//
// Which packages: apt `linux-headers-<kernel>`, rpm-md `kernel-devel-<kernel>`,
// each with the packages built from the same source that it depends on
// (Debian's -common and linux-kbuild, Ubuntu's linux-headers-<abi>).

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "node-images/driver_files.hpp"
#include "packages/packages.hpp"
#include "recipes/recipe.hpp"

namespace gb {
class Progress;
}
namespace gb::mirror {
class Store;
}

namespace gb::node_images {

// The build's one cache of fetched package files: the store's blobs, by
// sha256. The kernel header artifacts reach theirs; the site repository's
// are reached by no image, so `store gc` frees them. A kept file is hashed
// again before it is used; one whose bytes went bad is dropped and fetched again.
class StorePackageCache final : public packages::PackageCache {
public:
  explicit StorePackageCache(mirror::Store& store) : m_store(store) {}
  std::optional<std::filesystem::path> find(const std::string& sha256, std::uint64_t size) override;
  Result<std::filesystem::path> keep(const std::filesystem::path& file, const std::string& sha256,
                                     std::uint64_t size) override;

private:
  mirror::Store& m_store;
};

inline constexpr const char* k_kernel_packages_artifact_type = "application/vnd.gpubundle.kernel-packages.v1";
inline constexpr const char* k_kernel_packages_repository = "localhost/gpubundle/kernel-packages";

// The header package files for `kernel`, from the store when it has them,
// else fetched and stored first. Files are written under `work` (checked
// against their digests on the way out).
Result<std::vector<std::filesystem::path>> kernel_header_packages(const recipes::Recipe& recipe, const std::string& kernel, mirror::Store& store,
                                                                  const std::filesystem::path& work, Progress* progress);

// When `in` names no kernel tree and no header package, fetches the header
// packages of every kernel in `kernels` (kernel_header_packages) into `work`
// and lists them in in.kernel_headers. Otherwise leaves `in` alone.
Result<void> add_fetched_headers(const recipes::Recipe& recipe, const std::vector<std::string>& kernels, mirror::Store& store,
                                 const std::filesystem::path& work, DriverInputs& in, Progress* progress);

}  // namespace gb::node_images
