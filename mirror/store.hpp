#pragma once
// The content store: an OCI image layout (image-spec 1.1 "image-layout") that
// skopeo and umoci read, plus the charts and a sqlite catalog.
//
//   STORE/oci-layout            {"imageLayoutVersion":"1.0.0"}
//   STORE/index.json            OCI index; one entry per stored image:
//                                 {mediaType, digest, size, annotations: {
//                                   "org.opencontainers.image.ref.name": full source reference
//                                       (nvcr.io/nvidia/driver:550.127.08-ubuntu22.04),
//                                   "io.gpubundle.platforms": "linux/amd64,linux/arm64",
//                                   "io.gpubundle.mediaType": served type, Docker images only}}
//                               The blob bytes and digest are the upstream ones, never converted: a
//                               Docker schema2 list stays a Docker list, so digests survive. Only the
//                               index.json descriptor of a Docker list/manifest says OCI index/manifest
//                               (with the served type in io.gpubundle.mediaType), because skopeo and
//                               containers/image skip index.json entries of any other type when they
//                               look a name up. Entries are sorted by ref name; entries without a ref
//                               name are kept as found.
//   STORE/blobs/sha256/<hex>    every manifest, index, config and layer, once (deduplicated
//                               across images). Indexes are stored whole but sparse: only the
//                               children for io.gpubundle.platforms (and their blobs) are present.
//   STORE/charts/<name>-<version>.tgz   Helm charts (recipes/chart_source.hpp chart_file_name())
//   STORE/catalog.db            sqlite index of the above (mirror/catalog_db.hpp); written last
//   STORE/keys/package-repo.asc the site package repository's OpenPGP signing key (armoured
//                               secret key, 0600), made by the first `build` that needs it
//                               (builder/pipeline_packages.hpp); it never leaves the machine
//   STORE/packages/.<name>.<pid>  a build's scratch (the site repository on its way into an
//                               image). Fetched package files are blobs like any other
//                               (node-images/kernel_packages.hpp StorePackageCache): a kernel's
//                               header artifact reaches its own; gc frees the rest
//   STORE/.lock                 flock(2): exclusive for writers (mirror, gc), shared for fsck
//
//   STORE/blobs/sha256/<hex>.partial   a download in progress, or cut short (kill, full disk,
//                               network): the next mirror resumes it from its last byte and
//                               checks the whole blob's sha256 before publishing it.
//
// Publishing: a blob (fetched, built or a manifest) grows in "<hex>.partial"; once its size and
// sha256 match it waits, complete, for the next sync_blobs(), which fsyncs every waiting blob (in
// parallel), renames each to "<hex>" and fsyncs blobs/sha256 once. A mirror's transfer workers
// instead sync and name each blob as it completes (BlobSync::Now), while the others download;
// sync_blobs() then only fsyncs the folder. A blob never has its name before its bytes are on
// disk; each costs one fsync, and the folder one for all of them.
// Other files (index.json, charts) are written as "NAME.tmp.XXXXXX" and renamed (common/files.hpp
// AtomicFile). Every artifact, pulled
// or built here, then goes through Store::publish(), the one place that orders the rest:
// configs and layers present -> manifests -> index.json -> catalog rows. A crash therefore
// leaves at worst unreferenced blobs, partial downloads and temp files. Only a holder of the
// exclusive lock writes, so the next exclusive open (mirror, gc, ...) removes every temp file
// (no live process can own one) and every partial whose blob is already complete; gc also
// removes the other partials.
//
// Repair: fsck names a blob whose bytes do not hash to its name; `store fsck --repair` removes
// such blobs, and the next mirror of a lock that needs them fetches them again (a stored
// manifest is also checked and replaced whenever mirror writes it).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "common/files.hpp"
#include "mirror/catalog_db.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"

namespace gb::mirror {

inline constexpr std::string_view k_ref_name_annotation = "org.opencontainers.image.ref.name";
inline constexpr std::string_view k_platforms_annotation = "io.gpubundle.platforms";
inline constexpr std::string_view k_media_type_annotation = "io.gpubundle.mediaType";

// One index.json entry.
struct StoredImage {
  std::string ref;  // full source reference
  std::string media_type;
  std::string digest;
  std::uint64_t size = 0;
  std::vector<std::string> platforms;  // for indexes: the children kept
};

namespace detail {
struct PendingBlobs;
}

// When a published blob's bytes reach the disk: in the store's next
// sync_blobs(), all together, or in BlobWriter::publish() itself.
enum class BlobSync { Batch, Now };

// Streams one blob into the store as "<hex>.partial", continuing the bytes a
// previous run left there; publish() checks size and sha256 against the
// expected digest and names it (see BlobSync). A writer
// that is dropped unpublished leaves its partial file for the next run to
// resume. Bytes go to the file in pieces of k_write_piece, straight from the
// chunks the client hands over (only a tail smaller than a piece waits in a
// buffer), and writeback starts every k_writeback_step. No bigger pieces: for
// a write(2) of more than 32 KiB the kernel gives the page cache large folios
// from the free lists' high orders, and on a VM whose free memory goes back to
// the host (virtio-balloon free page reporting) each first touch of those is
// a fault on the host; on the build machine 1 MiB writes of a 277 MiB set cost
// 0.6 s of system time against 0.07 s for 32 KiB ones (bench/README.md).
class BlobWriter final : public BlobSink {
public:
  ~BlobWriter() override;
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;
  Result<void> write(std::string_view chunk) override;
  std::uint64_t size() const override { return m_written; }
  Result<void> truncate() override;
  Result<std::uint64_t> resume(signing::Sha256& hasher) override;
  bool hashes() const override { return true; }
  std::string sha256_hex() override;
  // Checks size and sha256; the blob gets its name at the next sync_blobs(),
  // or, with BlobSync::Now, here: fdatasync, then rename, on the caller's
  // thread (a transfer worker, while the others download).
  Result<void> publish(BlobSync when = BlobSync::Batch);
  const std::string& digest() const { return m_digest; }

  static constexpr std::size_t k_write_piece = 32 << 10;
  static constexpr std::uint64_t k_writeback_step = 1 << 20;

private:
  friend class Store;
  BlobWriter(std::string digest, std::uint64_t expected, std::filesystem::path final_path, int fd, detail::PendingBlobs& pending);
  Result<void> put(std::string_view bytes);
  void start_writeback();
  Result<void> flush();
  std::string m_digest;
  std::uint64_t m_expected = 0;
  std::uint64_t m_written = 0;  // received, buffered bytes included
  std::uint64_t m_flushed = 0;  // in the file
  std::uint64_t m_synced = 0;   // writeback started up to here
  std::string m_buffer;
  std::filesystem::path m_final;
  std::filesystem::path m_partial;
  int m_fd = -1;
  signing::Sha256 m_hash;
  std::string m_hex;  // m_hash's result, once taken
  detail::PendingBlobs& m_pending;
};

// One image or artifact for Store::publish(): its top manifest or index, as
// stored, and an index's kept children. Configs and layers must already be
// in the store (put_blob, put_blob_file, BlobWriter::publish).
struct Publication {
  std::string ref;                      // full reference: the index.json ref name and the catalog key
  oci::Manifest top;                    // oci::parse_manifest() of the bytes to store
  std::vector<oci::Manifest> children;  // an index's kept child manifests, each listed by `top`
  std::vector<std::string> platforms;   // asked for (pulled) or built for; an index's kept children
  std::string source;                   // catalog: the repository pulled from, or k_built_here

  // Bytes of every blob it reaches, manifests included.
  std::uint64_t bytes() const;
};

enum class StoreAccess {
  Read,       // no lock (ls): index.json is replaced atomically
  Shared,     // flock LOCK_SH (fsck)
  Exclusive,  // flock LOCK_EX, creates the layout when absent (mirror, gc)
};

class Store {
public:
  // Waits up to wait_s for the lock, then fails naming the lock file.
  static Result<Store> open(const std::filesystem::path& root, StoreAccess access, int wait_s = 10);
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::filesystem::path& root() const;
  // STORE/packages and STORE/keys (see the layout above). A build's scratch
  // lives in packages/ as ".<name>.<pid>"; gc removes what a killed one left.
  std::filesystem::path packages_dir() const;
  std::filesystem::path keys_dir() const;
  std::filesystem::path blob_path(std::string_view digest) const;
  // Present with the expected size (size 0: any size).
  bool has_blob(std::string_view digest, std::uint64_t size = 0) const;
  Result<std::string> read_blob(std::string_view digest) const;
  // Small blobs (manifests): verified and queued for sync_blobs(). No-op when
  // present and intact; a present copy with other bytes (a bad disk) is replaced.
  Result<void> stage_blob(std::string_view digest, std::string_view bytes);
  // stage_blob, then sync_blobs: durable and named on return.
  Result<void> put_blob(std::string_view digest, std::string_view bytes);
  Result<std::unique_ptr<BlobWriter>> open_blob(const std::string& digest, std::uint64_t size);
  // A file made elsewhere (a built layer): streamed in, checked like any blob,
  // durable and named on return.
  Result<void> put_blob_file(const std::string& digest, std::uint64_t size, const std::filesystem::path& file);
  // Makes every blob published or staged since the last call durable, then
  // names it: fsync each (in parallel), rename each, fsync blobs/sha256 once.
  // publish() calls it; a run that stops early calls it to keep what it got.
  Result<void> sync_blobs();

  Result<std::vector<StoredImage>> images() const;
  std::optional<StoredImage> find_image(const std::string& ref) const;
  // Adds or replaces entries by ref and rewrites index.json atomically. Every
  // blob the entries reach must already be published.
  Result<void> add_images(const std::vector<StoredImage>& images);
  // The publish order, the same for every artifact:
  //   0. sync_blobs(): what was fetched or staged gets its name;
  //   1. every config and layer of every manifest is present at its size (a
  //      blob is verified against its digest before it gets its name, so a
  //      present blob is a verified one), and every child is listed by its
  //      index; otherwise nothing is written;
  //   2. the child manifests, then the top ones (verified), in one sync_blobs();
  //   3. index.json, once, with every entry (add_images);
  //   4. the catalog rows of the images and of every blob they reach.
  // index.json thus never names a manifest whose blobs are not all there.
  Result<void> publish(const std::vector<Publication>& items);

  std::filesystem::path chart_path(const std::string& name, const std::string& version) const;
  Result<void> put_chart(const std::string& name, const std::string& version, std::string_view bytes, const std::string& source);

  // Opened on first use; needs Shared or Exclusive access to write.
  Result<CatalogDb*> catalog();

  struct FsckReport {
    std::vector<std::string> problems;  // one line each
    std::vector<std::string> repaired;  // "blobs/sha256/<hex>" removed by repair
    std::size_t blobs = 0;
    std::size_t images = 0;
    std::uint64_t bytes = 0;
  };
  // Re-hashes every blob, checks that every index.json entry resolves and that
  // every manifest's config and layers (and the kept children of an index) exist.
  // With `repair` (needs Exclusive access) a blob whose bytes do not match its
  // name is removed and listed in `repaired`, so that mirror fetches it again.
  Result<FsckReport> fsck(bool repair = false);

  struct GcReport {
    std::size_t blobs_removed = 0;
    std::size_t temps_removed = 0;  // temp files, partial downloads and killed builds' scratch folders
    std::uint64_t bytes_freed = 0;
  };
  // Removes blobs no index.json entry reaches, temp files, partial downloads
  // and the scratch folders of builds that were killed: all of them when this
  // process holds the exclusive lock (no writer can own them), else those
  // older than an hour.
  Result<GcReport> gc();
  // What the exclusive open swept: temp files of killed runs, partials of
  // blobs already complete.
  const GcReport& swept() const;

  // Every blob digest an index.json entry reaches (present ones only).
  Result<std::vector<std::string>> reachable();

private:
  Store();
  void sweep();
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gb::mirror
