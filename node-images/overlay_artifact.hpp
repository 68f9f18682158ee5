#pragma once
// The baked node overlay (node-images/bake.hpp) as an OCI artifact
// (image-spec 1.1), so that it sits in the store, travels in bundles and
// through registries like any image, and comes back out as the same files.
//
//   manifest  application/vnd.oci.image.manifest.v1+json
//     artifactType  application/vnd.gpubundle.node-overlay.v1
//     config        the empty descriptor (application/vnd.oci.empty.v1+json, "{}")
//     layers, each titled (org.opencontainers.image.title) with its file name:
//       overlay.tar.zst  application/vnd.oci.image.layer.v1.tar+zstd
//                        io.gpubundle.uncompressed.sha256 = sha256 of overlay.tar
//       install.sh       application/vnd.gpubundle.node-overlay.install.v1+sh
//       manifest.json    application/vnd.gpubundle.node-overlay.manifest.v1+json
//       values.yaml      application/vnd.gpubundle.node-overlay.values.v1+yaml
//       packages/<f>     application/vnd.gpubundle.package.v1   (.deb/.rpm, sorted)
//     annotations: org.opencontainers.image.created (SOURCE_DATE_EPOCH or 0),
//       io.gpubundle.driver.{version,kernels,signer,installer-sha256}
//
// Reference: <repository>:<driver version>-<osTag>, repository by default
// localhost/gpubundle/node-overlay ("localhost": made here, pulled from
// nowhere). The lock lists it with component "nodeOverlay", origin "built".
// zstd level 3 with one thread: the same overlay gives the same digest with
// the same libzstd (Debian 12's); another zstd release may compress differently.

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "recipes/lock.hpp"

namespace gb::mirror {
class Store;
}
namespace gb::signing {
class Keyring;
}

namespace gb::node_images {

inline constexpr const char* k_node_overlay_artifact_type = "application/vnd.gpubundle.node-overlay.v1";
inline constexpr const char* k_node_overlay_repository = "localhost/gpubundle/node-overlay";
inline constexpr const char* k_node_overlay_platform = "linux/amd64";

struct StoredOverlay {
  std::string ref;
  std::string digest;  // manifest digest
  std::uint64_t size = 0;  // all blobs

  // What record_built() (recipes/lock.hpp) adds to a lock, so that bundles carry it.
  recipes::BuiltImage built() const { return {recipes::BuiltKind::NodeOverlay, ref, digest, k_node_overlay_platform}; }
};

// Stores the bake output folder `dir` (overlay.tar, install.sh, manifest.json,
// values.yaml, packages/) as an artifact named `ref`. Blobs first, index.json last.
Result<StoredOverlay> store_overlay(mirror::Store& store, const std::filesystem::path& dir, const std::string& ref);

std::string overlay_tag(const std::string& driver_version, const std::string& os_tag);

struct ExportedOverlay {
  std::string ref;
  std::string digest;
  std::vector<std::string> files;  // written, relative to the output folder
};

// Writes the artifact's files into `out`, a new or empty folder (overlay.tar
// decompressed), each checked against its digest and overlay.tar against
// manifest.json, in a staging folder renamed to `out` when all checked out.
// ref "" picks the only overlay there is.
Result<ExportedOverlay> export_overlay_from_store(const mirror::Store& store, const std::string& ref, const std::filesystem::path& out);
// The same from bundle volumes, verified whole first (trusted == nullptr:
// signature not checked).
Result<ExportedOverlay> export_overlay_from_bundle(const std::vector<std::filesystem::path>& volumes, const signing::Keyring* trusted,
                                                   const std::string& ref, const std::filesystem::path& out);

}  // namespace gb::node_images
