// The bundle reader (bundles/bundle.hpp, bundle_blobs.hpp) the way
// `node-image export` and import use it: verify every given volume, then
// read each located blob back from its place in the volumes; and import's
// way, blobs hashed only when asked (defer_blobs, hash_blobs). Signatures are
// not checked (--insecure-skip-signature), so that the fuzzer reaches what
// comes after them; signature parsing has its own target (bundle_manifest).

#include <set>

#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "fuzz/bundle_volumes.hpp"
#include "fuzz/fuzz_input.hpp"
#include "recipes/lock.hpp"

namespace {

void read_back(const gb::bundles::VerifyReport& verified) {
  auto blobs = gb::bundles::BundleBlobs::from(verified);
  if (!blobs) return;
  for (const auto& image : verified.manifest.images)
    for (const auto& digest : image.blobs)
      (void)blobs->stream_content(digest, [](std::string_view) -> gb::Result<void> { return {}; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto parts = gbfuzz::split_volumes(gbfuzz::text(data, size));
  if (parts.size() > 8) return 0;
  std::vector<std::filesystem::path> volumes;
  for (std::size_t i = 0; i < parts.size(); ++i)
    volumes.push_back(gbfuzz::scratch_file("fuzz.bundle." + std::to_string(i + 1), parts[i]));
  for (const auto& v : volumes) (void)gb::bundles::read_volume_manifest(v);  // bundle inspect

  gb::bundles::VerifyOptions options;  // what export passes, less the keyring
  gb::bundles::VerifyReport verified = gb::bundles::verify_bundle(volumes, options);
  if (verified.problems.empty()) {
    (void)gb::recipes::parse_lock(verified.manifest.lock_json, "bundle lock");
    read_back(verified);
  }
  options.defer_blobs = true;  // import: then every blob it would push
  gb::bundles::VerifyReport deferred = gb::bundles::verify_bundle(volumes, options);
  if (!deferred.problems.empty()) return 0;
  read_back(deferred);  // manifests only, so far
  std::set<std::string> all;
  for (const auto& f : deferred.manifest.files) all.insert(f.blob);
  gb::bundles::hash_blobs(deferred, all);
  if (deferred.problems.empty()) read_back(deferred);
  return 0;
}
