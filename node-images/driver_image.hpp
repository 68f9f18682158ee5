#pragma once
// `gpubundle driver build`: one precompiled driver image per kernel, written
// into the content store (mirror/store.hpp) and tagged as the lock expects:
//   <repository>:<branch>-<kernel>-<osTag>
//
// Image = the base image's layers + one deterministic layer
// (node-images/layer.hpp, gzip, application/vnd.oci.image.layer.v1.tar+gzip):
//   lib/modules/<k>/kernel/drivers/video/<m>.ko   signed when asked
//   lib/modules/<k>/modules.dep, .bin, ...         depmod -b output
//   userspace at its manifest destinations (usr/bin/nvidia-smi, usr/lib/x86_64-linux-gnu/...)
//   opt/lib/firmware/nvidia/<ver>/gsp_*.bin        the operator mounts over /lib/firmware
//   usr/local/bin/nvidia-driver                    our entrypoint (node-images/nvidia-driver)
// When the base has /lib -> usr/lib (merged /usr), lib/modules goes to usr/lib/modules so the
// layer never replaces that link with a folder.
//
// Config: the base config plus env DRIVER_VERSION, DRIVER_BRANCH, KERNEL_VERSION,
// NVIDIA_VISIBLE_DEVICES=void; labels io.gpubundle.driver.{version,kernel,signer,installer-sha256};
// entrypoint ["nvidia-driver"], cmd ["init"]; one history entry; created = SOURCE_DATE_EPOCH or 0.
// Docker schema2 bases are rewritten as OCI (same blobs, OCI media types).
//
// Base: `--base REF` (a reference in the store, or oci:DIR:TAG for an OCI
// layout folder whose blobs are copied in), else the conventional driver
// image <repository>:<version>-<osTag> from the store. Nothing reaches
// index.json until every blob of every kernel's image is published.

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "node-images/driver_files.hpp"
#include "recipes/lock.hpp"

namespace gb::mirror {
class Store;
}

namespace gb::node_images {

struct DriverImageOptions {
  std::string repository = "nvcr.io/nvidia/driver";
  std::string os_tag;
  std::string base;  // "" = <repository>:<version>-<osTag> from the store
  std::string architecture = "amd64";
};

struct BuiltDriverImage {
  std::string kernel;
  std::string ref;
  std::string digest;  // manifest digest
  std::uint64_t size = 0;
  std::string layer_digest;
  std::string platform;  // "linux/<architecture>"

  // What record_built() (recipes/lock.hpp) puts in a lock.
  recipes::BuiltImage built() const { return {recipes::BuiltKind::DriverImage, ref, digest, platform}; }
};

std::string precompiled_tag(const std::string& branch, const std::string& kernel, const std::string& os_tag);

Result<std::vector<BuiltDriverImage>> build_driver_images(const PreparedDriver& driver, mirror::Store& store,
                                                          const DriverImageOptions& options);

}  // namespace gb::node_images
