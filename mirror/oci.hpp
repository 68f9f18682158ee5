#pragma once
// OCI and Docker manifest types. Manifests are kept as the exact bytes the
// registry served: digests are over those bytes, so nothing here ever
// re-serialises a manifest that will be stored or pushed. The one document
// made here is the filtered index (filter_index below), a new index with a
// new digest, made the same way everywhere so that anyone holding the
// upstream index can make it again.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::mirror::oci {

inline constexpr std::string_view k_oci_manifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view k_oci_index = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view k_docker_manifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view k_docker_list = "application/vnd.docker.distribution.manifest.list.v2+json";
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

// The word a platform list holds to ask for every child of an index,
// attestations and platforms the recipe never names included.
inline constexpr std::string_view k_all_platforms = "all";

// buildx attestation manifests: an index entry of platform unknown/unknown
// whose annotations name the image manifest it attests.
inline constexpr const char* k_reference_type_annotation = "vnd.docker.reference.type";
inline constexpr const char* k_reference_digest_annotation = "vnd.docker.reference.digest";
bool is_attestation(const Descriptor& d);

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

// The children of `index` carried for `platforms`, in the index's order:
// every entry whose platform matches one asked for (Platform::matches), the
// attestation entries naming one of those, and every entry at all when
// `platforms` holds k_all_platforms. `missing` gets each asked-for platform
// that no entry matches.
std::vector<const Descriptor*> carried_children(const Manifest& index, const std::vector<std::string>& platforms,
                                                std::vector<std::string>* missing = nullptr);

// The index a registry gets when only `carried` (entries of `index`, by
// digest) travel. Registries built on distribution (docker-registry 2.x,
// Harbor) and Zot refuse an index naming a manifest they lack, so a sparse
// upstream index cannot be pushed. nullopt when every entry is carried: then
// the upstream index itself is pushed and its digest kept. Otherwise the
// upstream JSON with "manifests" cut to the carried entries, upstream order
// kept and every other field as it was, written compact with sorted keys
// (nlohmann::json::dump()). A pure function of the upstream bytes and the
// set carried: docs/bundle-format.md.
Result<std::optional<Manifest>> filter_index(const Manifest& index, const std::vector<std::string>& carried);
// filter_index of what carried_children(index, platforms) picks: the one rule
// that mirror, bundle create, bundle verify and import each apply.
Result<std::optional<Manifest>> site_index(const Manifest& index, const std::vector<std::string>& platforms);

}  // namespace gb::mirror::oci
