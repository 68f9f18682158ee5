// Writes the seeds that come from built artifacts (fuzz/make-corpus.sh runs
// it): a tiny store of three images becomes a one-volume bundle, the same
// bundle split into two volumes (one blob cut into parts), its manifest with
// signature, its lock and its image manifests.
// Usage: make_seeds CORPUS_DIR
#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>

#include "bundles/bundle.hpp"
#include "common/files.hpp"
#include "common/progress.hpp"
#include "fuzz/bundle_volumes.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"
#include "signing/signature.hpp"

namespace fs = std::filesystem;
using namespace gb;

namespace {

struct Entry {
  std::string path;
  std::string data;
};

std::vector<Entry> read_tar(const fs::path& p) {
  std::vector<Entry> out;
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  if (archive_read_open_filename(a, p.c_str(), 65536) != ARCHIVE_OK) throw std::runtime_error("cannot read " + p.string());
  archive_entry* e;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    Entry t{archive_entry_pathname(e), ""};
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) t.data.append(buf, static_cast<size_t>(n));
    out.push_back(std::move(t));
  }
  archive_read_free(a);
  return out;
}

void write_tar(const fs::path& p, const std::vector<Entry>& entries) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (archive_write_open_filename(a, p.c_str()) != ARCHIVE_OK) throw std::runtime_error("cannot write " + p.string());
  for (const auto& t : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, t.path.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, static_cast<la_int64_t>(t.data.size()));
    archive_write_header(a, e);
    archive_write_data(a, t.data.data(), t.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

std::string descriptor(std::string_view media, const std::string& blob) {
  return "{\"mediaType\":\"" + std::string(media) + "\",\"digest\":\"" + sha256_digest(blob) + "\",\"size\":" +
         std::to_string(blob.size()) + "}";
}

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

  std::mt19937 rng(11);
  std::string layer(1500, '\0');
  for (auto& c : layer) c = static_cast<char>(rng());
  std::string tar_layer = std::string(600, 'a') + "uncompressed layer";
  std::string cfg_a = R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}})";
  std::string cfg_b = R"({"architecture":"amd64","os":"linux","config":{"Env":["B=1"]}})";
  for (const auto* b : {&layer, &tar_layer, &cfg_a, &cfg_b}) store.put_blob(sha256_digest(*b), *b).value_or_throw();
  std::string man_a = "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(oci::k_oci_manifest) + "\",\"config\":" +
                      descriptor("application/vnd.oci.image.config.v1+json", cfg_a) + ",\"layers\":[" +
                      descriptor("application/vnd.oci.image.layer.v1.tar+gzip", layer) + "," +
                      descriptor("application/vnd.oci.image.layer.v1.tar", tar_layer) + "]}";
  std::string index_a = "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(oci::k_oci_index) +
                        "\",\"manifests\":[{\"mediaType\":\"" + std::string(oci::k_oci_manifest) + "\",\"digest\":\"" +
                        sha256_digest(man_a) + "\",\"size\":" + std::to_string(man_a.size()) +
                        ",\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}}]}";
  std::string man_b = "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(oci::k_docker_manifest) + "\",\"config\":" +
                      descriptor("application/vnd.docker.container.image.v1+json", cfg_b) + ",\"layers\":[" +
                      descriptor("application/vnd.docker.image.rootfs.diff.tar.gzip", layer) + "]}";
  for (const auto* m : {&man_a, &index_a, &man_b}) store.put_blob(sha256_digest(*m), *m).value_or_throw();
  Lock lock;
  std::vector<StoredImage> stored;
  for (const auto& [ref, media, bytes] : {std::tuple{"nvcr.io/nvidia/driver:580.105.08-ubuntu22.04", oci::k_oci_index, &index_a},
                                          std::tuple{"nvcr.io/nvidia/k8s-device-plugin:v0.17.0", oci::k_docker_manifest, &man_b}}) {
    stored.push_back({ref, std::string(media), sha256_digest(*bytes), bytes->size(), {"linux/amd64"}});
    LockImage li;
    li.components = {"devicePlugin"};
    li.source = ref;
    li.platforms = {"linux/amd64"};
    li.digest = sha256_digest(*bytes);
    lock.images.push_back(li);
  }
  store.add_images(stored).value_or_throw();
  store.put_chart("gpu-operator", "v24.9.2", "chart bytes", "seed").value_or_throw();
  lock.generator = "gpubundle seeds";
  lock.recipe_name = "seed";
  lock.operator_version = "v24.9.2";
  lock.chart = {"gpu-operator", "v24.9.2", "v24.9.2", "seed", ""};
  lock.driver.mode = "conventional";

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

  // Two volumes: the random layer cut in two parts, one in each volume.
  auto entries = read_tar(o.output);
  VolumeManifest m = parse_volume_manifest(entries.at(0).data, "seed").value_or_throw();
  std::string layer_digest = sha256_digest(layer);
  std::vector<BundleFile> files;
  std::vector<Entry> vol1, vol2;
  for (const auto& f : m.files) {
    auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.path == f.path; });
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
      (n == 1 ? vol1 : vol2).push_back({part.path, half[n - 1]});
    }
  }
  m.files = files;
  m.volumes = 2;
  std::vector<fs::path> split;
  std::string joined;
  for (int n = 1; n <= 2; ++n) {
    m.volume = n;
    std::string text = manifest_to_json(m);
    std::vector<Entry> tar = {{std::string(k_volume_manifest), text}, {std::string(k_volume_signature), sign_detached(key, text).value_or_throw()}};
    for (const auto& e : n == 1 ? vol1 : vol2) tar.push_back(e);
    split.push_back(work / ("split.bundle." + std::to_string(n)));
    write_tar(split.back(), tar);
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
  // oci_manifest inputs: the first byte picks the served content type (fuzz/oci_manifest.cpp).
  save(corpus / "oci_manifest" / "oci-manifest", std::string(1, '\0') + man_a);
  save(corpus / "oci_manifest" / "oci-index", std::string(1, '\1') + index_a);
  save(corpus / "oci_manifest" / "docker-manifest", std::string(1, '\2') + man_b);
  fs::remove_all(work);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "make_seeds: " << e.what() << "\n";
  return 1;
}
