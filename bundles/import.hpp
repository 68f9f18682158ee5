#pragma once
// Import: a verified bundle into the site registry. First the signature,
// every tar header, every non-blob entry and the OCI closure (the manifests
// it reads are hashed); then what the site lacks: an image whose top manifest
// it has is complete (a registry takes a manifest only with all it names),
// the others get one HEAD per manifest, blob and repository; then every
// blob the site lacks is hashed, on all cores, before the first byte leaves,
// so a tampered bundle pushes nothing; a blob the site already has is never
// read. Each is pushed straight from its place in the tar (no unpacked
// copy), mounted across repositories where it already is, and the manifests
// follow, children before their index, bytes verbatim so digests stay exact.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kit/kit.hpp"
#include "common/error.hpp"
#include "mirror/push.hpp"
#include "mirror/registry_config.hpp"

namespace gb::signing {
class Keyring;
}
namespace gb {
class Progress;
}

namespace gb::bundles {

struct ImportOptions {
  kit::SiteRegistry site;
  kit::Layout layout = kit::Layout::StripHost;
  const signing::Keyring* trusted = nullptr;  // nullptr: --insecure-skip-signature
  mirror::RegistryConfig config;             // TLS and credentials; the site host is added when plain HTTP;
                                     // its plainHttp makes the site plain HTTP (push and kit) as
                                     // http:// does; its caFile also goes into the kit, for the nodes
  int jobs = 8;
  std::filesystem::path kit_dir;     // "" writes no kit
  // Ask about every blob even of images whose top manifest the site has: for
  // a registry that lost blobs behind its own back (storage restored, files
  // deleted), which a normal re-import takes as complete.
  bool check_blobs = false;
  // The site has no registry: the bundle is served by `gpubundle serve` at
  // site.host (docs/serve.md). Every blob is hashed, nothing is pushed and no
  // registry is contacted; the kit points at that host and carries serve's
  // systemd unit for these volumes.
  bool serve = false;
  // The kit's package repository on a server of the site's (kit::KitOptions).
  std::string package_repo_url;
  std::string package_repo_ca;
};

// The push's counters (mirror/push.hpp), and what import adds.
struct ImportReport : mirror::PushReport {
  std::string bundle_id;
  std::size_t images = 0;
  std::uint64_t bytes_hashed = 0;  // of the bundle: manifests, non-blob entries, and the blobs the site lacked
};

Result<ImportReport> import_bundle(const std::vector<std::filesystem::path>& volumes, const ImportOptions& options,
                                   Progress& progress);

}  // namespace gb::bundles
