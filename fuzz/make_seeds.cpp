// Writes the seeds that come from built artifacts (fuzz/make-corpus.sh runs
// it): the bundle tests' store (tests/unit/bundle_fixture.hpp) becomes a
// one-volume bundle, the same bundle split into two volumes (one blob cut into
// parts), its manifest with signature, its lock and its image manifests.
// Usage: make_seeds CORPUS_DIR
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "bundles/bundle.hpp"
#include "common/files.hpp"
#include "common/progress.hpp"
#include "fuzz/bundle_volumes.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"
#include "signing/signature.hpp"
#include "tests/unit/bundle_fixture.hpp"

namespace fs = std::filesystem;
using namespace gb;
using namespace gb::bundles;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;

namespace {

void save(const fs::path& file, std::string_view bytes) {
  fs::create_directories(file.parent_path());
  write_atomic(file, bytes).value_or_throw();
}

void check(const std::vector<fs::path>& volumes, const Keyring& keys, const char* what) {
  VerifyOptions o;
  o.trusted = &keys;
  auto r = verify_bundle(volumes, o);
  for (const auto& p : r.problems) std::cerr << what << ": " << p << "\n";
  if (!r.problems.empty()) throw std::runtime_error(std::string(what) + " seed does not verify");
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::cerr << "usage: make_seeds CORPUS_DIR\n";
    return 2;
  }
  fs::path corpus = argv[1];
  fs::path work = fs::temp_directory_path() / ("gpubundle-seeds." + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  Store store = Store::open(work / "store", StoreAccess::Exclusive).value_or_throw();

  // The bundle tests' store (tests/unit/bundle_fixture.hpp), with small layers.
  auto seed = gbtest::fill_bundle_store(store, 1000, 1500, 2000);
  const Lock& lock = seed.lock;

  // A fixed key, for seed files only: Ed25519 signs deterministically, so the
  // same build writes the same seeds.
  PrivateKey key = PrivateKey::parse("-----BEGIN PRIVATE KEY-----\n"
                                     "MC4CAQAwBQYDK2VwBCIEIJmdBrWbIoectDk3zjxm7w/0v9Tw9NydByV9mW/a5KE8\n"
                                     "-----END PRIVATE KEY-----\n",
                                     "make_seeds")
                       .value_or_throw();
  Keyring keys = Keyring::of(key.public_key());
  CreateOptions o;
  o.output = work / "one.bundle";
  auto progress = make_progress(ProgressStyle::None);
  create_bundle(store, lock, key, o, *progress).value_or_throw();
  check({o.output}, keys, "one-volume");
  save(corpus / "bundle" / "one-volume", read_file(o.output).value_or_throw());

  // Two volumes: the big layer cut in two parts, one in each volume.
  auto entries = gbtest::read_tar(o.output);
  VolumeManifest m = parse_volume_manifest(entries.at(0).data, "seed").value_or_throw();
  std::string layer_digest = sha256_digest(seed.big);
  std::vector<BundleFile> files;
  std::vector<gbtest::TarEntry> vol1, vol2;
  for (const auto& f : m.files) {
    auto it = std::find_if(entries.begin(), entries.end(), [&](const gbtest::TarEntry& e) { return e.path == f.path; });
    if (f.blob != layer_digest) {
      files.push_back(f);
      (files.size() % 2 ? vol1 : vol2).push_back(*it);
      files.back().volume = files.size() % 2 ? 1 : 2;
      continue;
    }
    std::string half[2] = {it->data.substr(0, it->data.size() / 2), it->data.substr(it->data.size() / 2)};
    for (int n = 1; n <= 2; ++n) {
      BundleFile part = f;
      char suffix[16];
      std::snprintf(suffix, sizeof suffix, ".part%04d", n);
      part.path = f.path + suffix;
      part.size = half[n - 1].size();
      part.sha256 = sha256_hex(half[n - 1]);
      part.volume = n;
      part.part = n;
      part.parts = 2;
      files.push_back(part);
      (n == 1 ? vol1 : vol2).push_back({part.path, half[n - 1], gbtest::k_tar_file, ""});
    }
  }
  m.files = files;
  m.volumes = 2;
  std::vector<fs::path> split;
  std::string joined;
  for (int n = 1; n <= 2; ++n) {
    m.volume = n;
    std::string text = manifest_to_json(m);
    std::vector<gbtest::TarEntry> tar = {{std::string(k_volume_manifest), text, gbtest::k_tar_file, ""},
                                         {std::string(k_volume_signature), sign_detached(key, text).value_or_throw(), gbtest::k_tar_file, ""}};
    for (const auto& e : n == 1 ? vol1 : vol2) tar.push_back(e);
    split.push_back(work / ("split.bundle." + std::to_string(n)));
    gbtest::write_tar(split.back(), tar);
    if (n > 1) joined += gbfuzz::k_volume_marker;
    joined += read_file(split.back()).value_or_throw();
    if (n == 1) save(corpus / "bundle_manifest" / "split-volume-1", text + std::string(gbfuzz::k_volume_marker) + tar[1].data);
  }
  check(split, keys, "two-volume");
  save(corpus / "bundle" / "two-volumes", joined);
  std::string reversed = read_file(split[1]).value_or_throw() + std::string(gbfuzz::k_volume_marker) + read_file(split[0]).value_or_throw();
  save(corpus / "bundle" / "two-volumes-reversed", reversed);

  save(corpus / "bundle_manifest" / "one-volume", entries.at(0).data + std::string(gbfuzz::k_volume_marker) + entries.at(1).data);
  save(corpus / "lock" / "bundle-lock.json", lock_to_json(lock));
  // oci_manifest inputs: the first byte picks the served content type (fuzz/fuzz_oci_manifest.cpp).
  save(corpus / "oci_manifest" / "oci-manifest", std::string(1, '\0') + seed.man_a);
  save(corpus / "oci_manifest" / "oci-index", std::string(1, '\1') + seed.index_a);
  save(corpus / "oci_manifest" / "docker-manifest", std::string(1, '\2') + seed.man_b);
  fs::remove_all(work);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "make_seeds: " << e.what() << "\n";
  return 1;
}
