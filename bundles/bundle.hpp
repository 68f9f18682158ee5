#pragma once
// The bundle: what crosses the air gap. One or more volumes; each volume is a
// plain POSIX tar (pax), uncompressed on the outside because image layers are
// already gzip or zstd streams. Entries, in this order:
//
//   gpubundle.json        the volume manifest (below)
//   gpubundle.json.sig    its detached signature (signing/signature.hpp)
//   <payload>             in the order the manifest's "files" lists them
//
// Payload paths:
//   lock.json                          the lock, digests filled
//   oci/oci-layout, oci/index.json     an OCI image layout of the bundle's images
//   oci/blobs/sha256/<hex>             a blob, as stored
//   oci/blobs/sha256/<hex>.zst         a blob, zstd-compressed (only JSON and
//                                      uncompressed layers: it pays there)
//   oci/blobs/sha256/<hex>.part<NNNN>  piece NNNN (from 0001) of a blob larger
//                                      than a volume
//   charts/<name>-<version>.tgz        the Helm chart
//   kit/...                            the install kit, when made
//
// Volume manifest, JSON with sorted keys:
//   {
//     "format": "gpubundle-bundle", "formatVersion": 1,   readers refuse newer
//     "tool": "gpubundle 0.1.0",
//     "bundleId": "<16 hex>",       sha256 of the sorted (path, sha256) list
//     "created": "<RFC 3339>" | null,  from SOURCE_DATE_EPOCH
//     "volume": {"index": 1, "count": N},
//     "delta": null | {"base": "<what it was made against>", "omitted": ["sha256:..."]},
//     "lock": { ...the lock... },
//     "images": [{"ref", "mediaType", "digest", "upstreamDigest"?, "platforms": [], "blobs": ["sha256:..."]}],
//     "files": [{"path", "size", "sha256", "volume", "blob": "sha256:..." | null,
//                "encoding": "zstd" | null, "part": [n, of] | null}]
//   }
// "files" lists the entries of every volume, so any one volume knows the whole
// bundle; each volume's own entries are those with its "volume" index. "size"
// and "sha256" are of the bytes stored in the tar. "images[].digest" is what
// import pushes under the image's tag. Where the bundle carries only some
// children of an upstream index, that is the filtered index
// (mirror/oci.hpp site_index), "upstreamDigest" names the upstream index,
// and both travel: a reader makes the filtered index again from the upstream
// one and the image's platforms, and refuses the bundle unless the bytes
// agree and the lock says the same two digests. "images[].blobs" is each
// image's closure (manifests, configs, layers); in a delta, blobs the site
// already has are in "delta.omitted" and in no volume, except manifests and
// the blobs of node overlays (lock component nodeOverlay), which always
// travel so that `node-image export` needs this bundle alone.
//
// Limits a reader applies to what a bundle claims, before it allocates for
// it (k_max_* below; the OCI ones, manifest size and index nesting, are in
// mirror/oci.hpp): the signed manifest and its signature, the entries of a
// bundle and of one volume, a path, the volume count (hence a blob's part
// count), and what a zstd entry may expand to. Every volume of a bundle
// carries the same manifest apart from "volume.index", the part numbers of a
// blob run 1..N once each, and the parts joined must hash to the blob: so
// volumes of two writes, or doubled or swapped parts, are refused.
//
// A reader checks the signature first, then walks the tar headers of every
// volume (names, types, sizes, duplicates, appended entries, truncation, zstd
// frame headers) and records where each entry's data is; then it hashes the
// entries on all cores, read with pread straight from those places (no
// temporary unpack), a blob in parts as one stream over its parts in order,
// so the bytes it hashed are the bytes a reader later gets. The same store, lock and key give a
// byte-identical bundle: sorted entries, mtimes from SOURCE_DATE_EPOCH (else
// 0), uid/gid 0 without names, fixed modes, and Ed25519 signatures.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "recipes/lock.hpp"

namespace gb::mirror {
class Store;
}
namespace gb::signing {
class PrivateKey;
class Keyring;
}
namespace gb {
class Progress;
}

namespace gb::bundles {

inline constexpr int k_bundle_format_version = 1;
inline constexpr std::string_view k_volume_manifest = "gpubundle.json";
inline constexpr std::string_view k_volume_signature = "gpubundle.json.sig";

// Reader limits (see above). Generous for any GPU Operator bundle: one holds
// a few hundred entries, and 4 GiB volumes of a terabyte make 256 volumes.
inline constexpr std::uint64_t k_max_manifest_bytes = 64 << 20;   // gpubundle.json
inline constexpr std::uint64_t k_max_signature_bytes = 64 << 10;  // gpubundle.json.sig
inline constexpr std::size_t k_max_bundle_entries = 100000;       // "files", "images", "omitted"; tar entries per volume
inline constexpr std::size_t k_max_bundle_path = 1024;            // bytes of an entry name
inline constexpr int k_max_volumes = 9999;                        // volume count, so also a blob's part count
inline constexpr std::uint64_t k_max_zstd_content = 16 << 20;     // a zstd entry decodes to its frame's declared size, at most this
inline constexpr std::uint64_t k_max_chart_bytes = 64 << 20;      // charts/*.tgz, read whole by import

struct BundleFile {
  std::string path;
  std::uint64_t size = 0;   // stored bytes
  std::string sha256;       // hex of the stored bytes
  int volume = 1;
  std::string blob;         // "sha256:..." for blob entries
  std::string encoding;     // "" or "zstd"
  int part = 0, parts = 0;  // for pieces of a large blob
};

struct BundleImage {
  std::string ref;
  std::string media_type;
  std::string digest;  // what the site gets under the tag
  std::vector<std::string> platforms;
  std::vector<std::string> blobs;
  std::string upstream_digest = {};  // the upstream index, when `digest` is its filtered index
};

struct VolumeManifest {
  int format_version = k_bundle_format_version;
  std::string tool;
  std::string bundle_id;
  std::string created;  // "" when not recorded
  int volume = 1;
  int volumes = 1;
  bool delta = false;
  std::string delta_base;
  std::vector<std::string> omitted;  // blob digests the site already has
  std::string lock_json;             // the lock as an object text
  std::vector<BundleImage> images;
  std::vector<BundleFile> files;
};

std::string manifest_to_json(const VolumeManifest& m);
Result<VolumeManifest> parse_volume_manifest(std::string_view text, const std::string& label);

// Extra files for the bundle besides images and chart (install kit, node-image
// artifacts): bundle path -> file on disk.
using ExtraFiles = std::map<std::string, std::filesystem::path>;

struct CreateOptions {
  std::filesystem::path output;      // volume 1; further volumes get ".002", ".003", ...
  std::uint64_t split_bytes = 0;     // 0: one volume
  bool compress = true;              // zstd for JSON and uncompressed layers
  std::set<std::string> have_blobs;  // delta: digests the site already has
  std::string delta_base;            // what they came from, for the manifest
  ExtraFiles extra;
  std::string created;               // RFC 3339, "" for none
  std::int64_t mtime = 0;            // of every tar entry (SOURCE_DATE_EPOCH)
};

struct CreateReport {
  std::vector<std::filesystem::path> volumes;
  std::string bundle_id;
  std::uint64_t bytes_written = 0;
  std::uint64_t blob_bytes = 0;       // as stored in the store
  std::uint64_t bytes_saved_by_zstd = 0;
  std::size_t blobs = 0;
  std::size_t blobs_omitted = 0;
};

// Writes the bundle for `lock` (digests filled) from the store. Each volume is
// written to a temp file, checked as it is written (every blob re-hashed) and
// renamed into place only when complete.
Result<CreateReport> create_bundle(const mirror::Store& store, const recipes::Lock& lock, const signing::PrivateKey& key, const CreateOptions& options,
                                   Progress& progress);

// Sets mtime and created from $SOURCE_DATE_EPOCH when it is set, so builds
// of the same inputs are byte-identical and say when they were made. Fails
// when it is set to something else than seconds (common/time.hpp).
Result<void> apply_source_date_epoch(CreateOptions& options);

// File name of volume n (1-based) of a bundle whose first volume is `first`.
std::filesystem::path volume_path(const std::filesystem::path& first, int n, int count);

// Where an entry's bytes are: a volume file and the offset of its data.
struct EntryLocation {
  std::filesystem::path volume;
  std::uint64_t offset = 0;
};

struct VerifyReport {
  std::vector<std::string> problems;  // one line each; empty: all good
  std::string bundle_id;
  std::string signer;  // key id
  VolumeManifest manifest;  // of the first volume read
  std::set<int> volumes_seen;
  std::uint64_t bytes = 0;   // read and hashed
  std::size_t entries = 0;   // whose headers checked out
  // path -> data of each intact entry, so a caller can read it again at
  // random (import pushes from the verified tar, never from a temp copy).
  std::map<std::string, EntryLocation> locations;
  // path -> data of each blob entry whose header checked out but whose bytes
  // are not hashed yet (VerifyOptions::defer_blobs): not readable through
  // BundleBlobs until hash_blobs() moves it to `locations`.
  std::map<std::string, EntryLocation> unhashed;
};

struct VerifyOptions {
  const signing::Keyring* trusted = nullptr;  // nullptr: signatures not checked (--insecure-skip-signature)
  // Hash a blob only when it is read: here, the manifests the closure check
  // walks; the rest when hash_blobs() is asked for them. Headers, the
  // manifest, non-blob entries and the closure are checked as always. Import
  // uses it to hash only what it pushes.
  bool defer_blobs = false;
};

// Reads the signed manifest of one volume without checking its payload
// (bundle inspect). `signer` gets the key id the signature names, unverified.
Result<VolumeManifest> read_volume_manifest(const std::filesystem::path& volume, std::string* signer = nullptr);

// Bundle commands take a missing or unreadable volume file as bad input
// (exit 2), like any other missing input file; a file that is there but
// fails a check is a failed verification (exit 1).
Result<void> require_volume_files(const std::vector<std::filesystem::path>& volumes);

// Verifies volumes (any order, any subset): signature, every entry's name,
// type, size and digest, duplicates, appended entries, truncation; and when
// every volume is given, completeness and the OCI closure. Entries are hashed
// on all cores.
VerifyReport verify_bundle(const std::vector<std::filesystem::path>& volumes, const VerifyOptions& options);

// Hashes the deferred entries of these blobs (defer_blobs), on all cores:
// each blob that checks out moves from `unhashed` to `locations`, each that
// does not adds its problems to the report.
void hash_blobs(VerifyReport& report, const std::set<std::string>& digests);

}  // namespace gb::bundles
