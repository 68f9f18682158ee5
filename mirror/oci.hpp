#pragma once
// OCI and Docker manifest types. Manifests are kept as the exact bytes the
// registry served: digests are over those bytes, so nothing here ever
// re-serialises a manifest that will be stored or pushed.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::oci {

inline constexpr std::string_view k_oci_manifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view k_oci_index = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view k_docker_manifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view k_docker_list = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view k_oci_layout_version = "1.0.0";
// Artifacts (image-spec 1.1): the empty config, and the annotation naming a layer's file.
inline constexpr const char* k_oci_empty = "application/vnd.oci.empty.v1+json";
inline constexpr const char* k_oci_title = "org.opencontainers.image.title";

// Limits every reader of manifests applies (bundles, registries, stores).
// 4 MiB is what registries accept for a manifest (distribution, Harbor, Zot).
inline constexpr std::size_t k_max_manifest_bytes = 4 << 20;
// Index levels above an image manifest: 1 is an ordinary multi-platform
// index; nested indexes are legal but rare. Walks stop past this.
inline constexpr int k_max_index_depth = 8;

bool is_index(std::string_view media_type);
bool is_manifest(std::string_view media_type);
// The Accept header value a puller sends: all four types above.
std::string accept_header();

struct Platform {
  std::string os;
  std::string architecture;
  std::string variant;
  std::string str() const;  // "linux/arm64/v8"
  // "linux/arm64" matches linux/arm64/v8 too.
  bool matches(std::string_view wanted) const;
};

struct Descriptor {
  std::string media_type;
  std::string digest;
  std::uint64_t size = 0;
  Platform platform;                               // index entries only
  std::map<std::string, std::string> annotations;  // kept for index.json
};

// A parsed manifest or index. `bytes` are the served bytes, verbatim.
struct Manifest {
  std::string media_type;
  std::string bytes;
  std::string digest;            // sha256 of bytes
  Descriptor config;             // image manifests
  std::vector<Descriptor> layers;     // image manifests
  std::vector<Descriptor> manifests;  // indexes
  bool index() const { return is_index(media_type); }
};

// Parses bytes served with content type `media_type` (the body's own
// mediaType wins when present). Computes the digest. Refuses more than
// k_max_manifest_bytes.
Result<Manifest> parse_manifest(std::string bytes, std::string_view media_type);

}  // namespace gb::oci
