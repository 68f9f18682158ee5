#include "bundle_fixture.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <random>
#include <stdexcept>
#include <string_view>

#include "common/archive_raii.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"

namespace gbtest {

using namespace gb;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;
namespace fs = std::filesystem;

namespace {

std::string descriptor(std::string_view media, const std::string& blob) {
  return "{\"mediaType\":\"" + std::string(media) + "\",\"digest\":\"" + sha256_digest(blob) + "\",\"size\":" +
         std::to_string(blob.size()) + "}";
}

std::string manifest(std::string_view media, std::string_view config_media, const std::string& config,
                     const std::vector<std::pair<std::string_view, const std::string*>>& layers) {
  std::string s = "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(media) + "\",\"config\":" + descriptor(config_media, config) +
                  ",\"layers\":[";
  for (size_t i = 0; i < layers.size(); ++i) s += (i ? "," : "") + descriptor(layers[i].first, *layers[i].second);
  return s + "]}";
}

}  // namespace

std::string pseudo_random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

BundleStore fill_bundle_store(Store& store, std::size_t base_bytes, std::size_t big_bytes, std::size_t tar_fill) {
  BundleStore b;
  b.base = pseudo_random(base_bytes, 1);
  b.big = pseudo_random(big_bytes, 2);
  b.tarlayer = std::string(tar_fill, 'a') + pseudo_random(1024, 3);
  std::string cfg_a = R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}})";
  std::string cfg_b = R"({"architecture":"amd64","os":"linux","config":{"Env":["B=1"]}})";
  std::string cfg_c = R"({"architecture":"amd64","os":"linux","config":{"Env":["C=1"]}})";
  for (const auto* x : {&b.base, &b.big, &b.tarlayer, &cfg_a, &cfg_b, &cfg_c}) store.put_blob(sha256_digest(*x), *x).value_or_throw();

  constexpr std::string_view oci_config = "application/vnd.oci.image.config.v1+json";
  constexpr std::string_view oci_gzip = "application/vnd.oci.image.layer.v1.tar+gzip";
  b.man_a = manifest(oci::k_oci_manifest, oci_config, cfg_a, {{oci_gzip, &b.base}, {oci_gzip, &b.big}});
  b.index_a = "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(oci::k_oci_index) + "\",\"manifests\":[{\"mediaType\":\"" +
              std::string(oci::k_oci_manifest) + "\",\"digest\":\"" + sha256_digest(b.man_a) + "\",\"size\":" +
              std::to_string(b.man_a.size()) + ",\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},{\"mediaType\":\"" +
              std::string(oci::k_oci_manifest) + "\",\"digest\":\"sha256:" + std::string(64, 'e') +
              "\",\"size\":500,\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\"}}]}";
  b.man_b = manifest(oci::k_docker_manifest, "application/vnd.docker.container.image.v1+json", cfg_b,
                     {{"application/vnd.docker.image.rootfs.diff.tar.gzip", &b.base}});
  b.man_c = manifest(oci::k_oci_manifest, oci_config, cfg_c, {{"application/vnd.oci.image.layer.v1.tar", &b.tarlayer}});
  for (const auto* m : {&b.man_a, &b.index_a, &b.man_b, &b.man_c}) store.put_blob(sha256_digest(*m), *m).value_or_throw();

  struct Img {
    std::string ref;
    std::string_view media;
    const std::string* bytes;
  };
  const std::vector<Img> imgs = {{"nvcr.io/nvidia/driver:580.105.08-ubuntu22.04", oci::k_oci_index, &b.index_a},
                                 {"nvcr.io/nvidia/k8s-device-plugin:v0.17.0", oci::k_docker_manifest, &b.man_b},
                                 {"registry.k8s.io/nfd/node-feature-discovery:v0.16.6", oci::k_oci_manifest, &b.man_c}};
  std::vector<StoredImage> stored;
  for (const auto& i : imgs) {
    stored.push_back({i.ref, std::string(i.media), sha256_digest(*i.bytes), i.bytes->size(), {"linux/amd64"}});
    LockImage li;
    li.components = {"x"};
    li.source = i.ref;
    li.platforms = {"linux/amd64"};
    li.digest = sha256_digest(*i.bytes);
    // As mirror records it: the site gets index_a cut to its amd64 child.
    if (i.bytes == &b.index_a)
      li.site_digest = oci::site_index(oci::parse_manifest(b.index_a, oci::k_oci_index).value_or_throw(), li.platforms).value_or_throw()->digest;
    b.lock.images.push_back(li);
  }
  store.add_images(stored).value_or_throw();
  store.put_chart("gpu-operator", "v24.9.2", "chart bytes", "test").value_or_throw();
  b.lock.generator = "test";
  b.lock.recipe_name = "t";
  b.lock.operator_version = "v24.9.2";
  b.lock.chart = {"gpu-operator", "v24.9.2", "v24.9.2", "test", ""};
  b.lock.driver.mode = "conventional";
  return b;
}

static_assert(AE_IFREG == k_tar_file, "TarEntry::type defaults to a regular file");

std::vector<TarEntry> read_tar(const fs::path& p) {
  std::vector<TarEntry> out;
  gb::detail::ArchiveReader a(archive_read_new());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), p.c_str(), 65536) != ARCHIVE_OK) throw std::runtime_error("cannot read " + p.string());
  archive_entry* e;
  while (archive_read_next_header(a.get(), &e) == ARCHIVE_OK) {
    TarEntry t{archive_entry_pathname(e), "", static_cast<int>(archive_entry_filetype(e)), ""};
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a.get(), buf, sizeof buf)) > 0) t.data.append(buf, static_cast<size_t>(n));
    out.push_back(std::move(t));
  }
  return out;
}

void write_tar(const fs::path& p, const std::vector<TarEntry>& entries) {
  gb::detail::ArchiveWriter a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  if (archive_write_open_filename(a.get(), p.c_str()) != ARCHIVE_OK) throw std::runtime_error("cannot write " + p.string());
  for (const auto& t : entries) {
    gb::detail::ArchiveEntry e(archive_entry_new());
    archive_entry_set_pathname(e.get(), t.path.c_str());
    archive_entry_set_filetype(e.get(), static_cast<unsigned>(t.type));
    archive_entry_set_perm(e.get(), 0644);
    if (t.type == AE_IFLNK) archive_entry_set_symlink(e.get(), t.link.c_str());
    archive_entry_set_size(e.get(), t.type == AE_IFREG ? static_cast<la_int64_t>(t.data.size()) : 0);
    archive_write_header(a.get(), e.get());
    if (t.type == AE_IFREG) archive_write_data(a.get(), t.data.data(), t.data.size());
  }
  archive_write_close(a.get());
}

}  // namespace gbtest
