#pragma once
// The mirror pipeline: lock -> store. It talks to registries only through
// ImageSource so that tests can drive it with an in-memory fake; the real
// source wraps RegistryClient.
//
// Steps, in order:
//   1. check: every image's top manifest (HEAD first; GET only when the digest
//      is not already in the store), the requested platforms present in each
//      index, their child manifests read. Every missing reference or platform
//      is collected and reported together before any blob moves. --locked
//      compares the digests with the lock here.
//   2. fetch: manifests are stored; configs and layers not already in the
//      store are fetched once each (shared blobs deduplicated), in parallel.
//   3. publish: index.json entries (after every blob is durable), then the
//      catalog rows. The lock gets the digests: the upstream one, and the
//      filtered index's (siteDigest) where only some children travel.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/progress.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry.hpp"
#include "mirror/store.hpp"
#include "recipes/lock.hpp"
#include "recipes/reference.hpp"

namespace gb::mirror {

class ImageSource {
public:
  virtual ~ImageSource() = default;
  virtual Result<oci::Manifest> get_manifest(const recipes::Reference& ref) = 0;
  // The digest, or nullopt when the registry says 404.
  virtual Result<std::optional<std::string>> head_manifest(const recipes::Reference& ref) = 0;
  // Calls each request's on_done after its digest matched; returns every failure.
  virtual Result<void> fetch_blobs(std::vector<BlobRequest> requests, const std::function<void(std::uint64_t)>& on_bytes) = 0;
  virtual Result<std::string> get_url(const std::string& url) = 0;
  virtual std::uint64_t bytes_downloaded() const = 0;
  // Failure lines told per host where a host could not be talked to at all
  // (RegistryClient::by_host): that host's one line instead of one per image.
  virtual std::vector<std::string> by_host(const std::vector<std::string>& lines) const { return lines; }
};

// The real source: a RegistryClient.
std::unique_ptr<ImageSource> registry_source(RegistryConfig config, ClientOptions options);

struct MirrorOptions {
  int jobs = 8;
  bool locked = false;  // refuse when an upstream digest differs from the lock
  // Carry every child of every index (attestations too): each upstream
  // image's lock platforms become ["all"], and the site keeps upstream digests.
  bool all_platforms = false;
};

struct MirrorImageResult {
  std::string ref;
  std::string digest;
  std::string media_type;
  std::uint64_t bytes = 0;  // manifests + blobs it reaches (for the kept platforms)
  bool up_to_date = false;  // nothing of it had to be fetched
};

struct MirrorSummary {
  std::vector<MirrorImageResult> images;
  std::size_t blobs_fetched = 0;
  std::size_t blobs_present = 0;
  std::uint64_t bytes_downloaded = 0;
  double seconds = 0;
};

// Mirrors every upstream image of the lock into the store and fills
// lock.images[].digest. Built images (LockImage::built) are skipped.
Result<MirrorSummary> mirror_images(recipes::Lock& lock, Store& store, ImageSource& source, Progress& progress, const MirrorOptions& options);

// One image by reference into the store, as mirror_images() would for a
// one-image lock (driver build's base, a matrix entry's pushed image).
// `digest` non-empty: the reference must resolve to it (as --locked), else
// it is refused naming both. Returns the stored top digest.
Result<std::string> mirror_one(Store& store, ImageSource& source, const std::string& ref, const std::string& digest,
                               const std::vector<std::string>& platforms, Progress& progress);

}  // namespace gb::mirror
