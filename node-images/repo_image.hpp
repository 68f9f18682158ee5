#pragma once
// The site package repository as an image (recipe driver.mode conventional
// with packages.sources): the server image (packages.server.image, by default
// busybox) plus one deterministic layer holding the repository folder that
// packages/site_repo.hpp wrote, so that the repository travels in bundles,
// deltas and split volumes and lands in the site registry like any image.
//
//   layer   srv/gpubundle-repo/...   the repository tree, files 0644, folders 0755
//   config  the server image's config plus
//             Entrypoint ["httpd", "-f", "-v", "-p", "8080", "-h", "/srv/gpubundle-repo"], Cmd none
//               (busybox's httpd applet: any server image must have an `httpd` like it on PATH)
//             User "65534:65534" (nobody), ExposedPorts 8080/tcp
//             Labels io.gpubundle.package-repo.{format, fingerprint, release-sha256}
//           one history entry; created = SOURCE_DATE_EPOCH or 0
//
// Reference: localhost/gpubundle/package-repo:<osTag>-<first 12 hex of the
// Release file's sha256>: a different package set is a different tag. The
// lock lists it with component "packageRepo", origin "built"
// (recipes/lock.hpp). The repository tree is the manifest's last layer: a
// site that serves packages from its own web server extracts it from there
// (docs/package-repos.md).

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "recipes/lock.hpp"

namespace gb::mirror {
class Store;
}

namespace gb::node_images {

inline constexpr const char* k_package_repo_repository = "localhost/gpubundle/package-repo";

struct RepoImageOptions {
  std::string base;  // the server image's reference, in the store
  std::string architecture = "amd64";
  std::string os_tag;
  std::string format = "apt";
  std::string fingerprint;     // of the repository's signing key
  std::string release_sha256;  // hex, names the content (packages/site_repo.hpp WrittenRepo)
  std::filesystem::path work;  // scratch folder for the layer files
};

struct BuiltRepoImage {
  std::string ref;
  std::string digest;  // manifest digest
  std::uint64_t size = 0;  // the new layer, compressed
  std::string platform;

  recipes::BuiltImage built() const { return {recipes::BuiltKind::PackageRepo, ref, digest, platform}; }
};

// Builds and publishes the image of the repository folder `repo_root`.
Result<BuiltRepoImage> build_repo_image(mirror::Store& store, const std::filesystem::path& repo_root, const RepoImageOptions& options);

}  // namespace gb::node_images
