#pragma once
// Images into a registry: the one push used by `import` (from a bundle),
// `store push` and `driver build --push` (from the store).
//
//   1. What the registry lacks. First each image's top manifest: where the
//      registry has it under its tag (or digest) the image is complete, since
//      a registry takes a manifest only when it has everything it names.
//      Then, for the others, one HEAD per child manifest and per blob and
//      repository, in one parallel pass.
//   2. PushOptions::prepare gets the blobs to upload, before the first byte
//      leaves (import hashes them there, so a tampered bundle pushes nothing);
//      a blob the registry has is never read.
//   3. Blobs the source does not carry (PushPlan::omitted: a delta bundle's)
//      must be at the registry already, or mountable from another repository
//      of the plan; otherwise nothing is pushed.
//   4. Blobs: the first repository needing a digest uploads it, the others
//      mount it from there.
//   5. Manifests, children before their index, bytes verbatim so that digests
//      stay exact; the top one by tag (or by digest when it has none).
// Running it again after a failure pushes only the rest.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "recipes/reference.hpp"

namespace gb {
class Progress;
}

namespace gb::mirror {

class BlobSource;
class RegistryClient;

struct PushImage {
  recipes::Reference repo;    // at the registry, no tag or digest
  recipes::Reference tagged;  // at the registry, with its tag when it has one, no digest
  std::vector<std::string> manifests;  // children first, top last
  std::vector<std::string> blobs;      // configs and layers, sorted, once each
  std::string top_hint;  // added to the error when the registry refuses the top manifest
};

struct PushManifest {
  std::string media_type;
  std::string bytes;
};

struct PushPlan {
  std::vector<PushImage> images;
  std::map<std::string, PushManifest> manifests;  // by digest
  std::set<std::string> omitted;                  // blobs the source does not carry
  std::string omitted_by = "the source";  // names the source in those errors ("this delta bundle")
  std::string omitted_hint;               // what to do when the registry lacks one of them
};

struct PushOptions {
  int jobs = 8;
  std::string verb = "push";           // names the operation in a failure's last line
  std::string place = "the registry";  // and the registry
  bool check_blobs = false;   // ask about every blob even of complete images
  // The bytes of one blob for its upload; on_bytes counts each byte once.
  std::function<Result<std::unique_ptr<BlobSource>>(const std::string& digest, const std::function<void(std::uint64_t)>& on_bytes)> open_blob;
  std::function<std::uint64_t(const std::string& digest)> stored_size;  // for progress and the report
  std::function<Result<void>(const std::set<std::string>& uploads)> prepare;  // may be empty
};

struct PushReport {
  std::size_t blobs_pushed = 0;
  std::size_t blobs_mounted = 0;
  std::size_t blobs_present = 0;
  std::size_t manifests_pushed = 0;
  std::size_t manifests_present = 0;
  std::uint64_t bytes_pushed = 0;
  std::vector<std::string> destinations;  // every image's `tagged`, sorted, once pushed (or present)
};

Result<PushReport> push_images(RegistryClient& client, const PushPlan& plan, const PushOptions& options, Progress& progress);

}  // namespace gb::mirror
