#pragma once
// The blobs of a verified bundle, read at random from their places in the
// volumes: import pushes from there and `node-image export` writes files from
// there, so neither needs an unpacked copy. Built from a VerifyReport's
// locations; entries that failed verification have none, and a blob whose
// hashing was deferred (VerifyReport::unhashed) is left out until it is
// hashed, so nothing unverified can be read.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::mirror {
class BlobSource;
}

namespace gb::bundles {

struct VerifyReport;

// One piece of a blob's stored bytes inside a volume.
struct BlobSegment {
  std::filesystem::path volume;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct BundleBlob {
  std::string encoding;               // "" or "zstd"
  std::vector<BlobSegment> segments;  // in part order
  std::uint64_t stored_size() const;
};

class BundleBlobs {
public:
  static Result<BundleBlobs> from(const VerifyReport& verified);

  const BundleBlob* find(std::string_view digest) const;
  // Stored bytes, whole (small entries: charts, zstd frames).
  static Result<std::string> read_stored(const BundleBlob& blob);
  // The blob's content (decoded when zstd), whole: manifests and configs.
  Result<std::string> content(std::string_view digest) const;
  // The content streamed to `out` in chunks, decoded when zstd; fails after
  // the last chunk when it does not match the digest, so callers write to a
  // temp file and publish only on success.
  Result<void> stream_content(std::string_view digest, const std::function<Result<void>(std::string_view)>& out) const;
  static Result<void> stream_content(const BundleBlob& blob, std::string_view digest,
                                     const std::function<Result<void>(std::string_view)>& out);
  // Stored bytes for a push; on_new_bytes counts each byte once across retries.
  static std::unique_ptr<mirror::BlobSource> source(const BundleBlob& blob, std::function<void(std::uint64_t)> on_new_bytes);
  // The content for a push: stored bytes, or a zstd blob decoded as it is
  // read (never whole in memory); on_stored_bytes counts stored bytes once.
  static Result<std::unique_ptr<mirror::BlobSource>> content_source(const BundleBlob& blob, std::function<void(std::uint64_t)> on_stored_bytes);

private:
  std::map<std::string, BundleBlob, std::less<>> m_blobs;
};

}  // namespace gb::bundles
