// Hostile bundles, crafted in memory: each case replays a finding of issue 11
// against the reader (parse_volume_manifest, verify_bundle, BundleBlobs).
// Signatures are not checked here (trusted = nullptr, as with
// --insecure-skip-signature), so every check below is the reader's own.
#include <archive_entry.h>
#include <catch2/catch.hpp>
#include <ctime>
#include <nlohmann/json.hpp>
#include <zstd.h>

#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "bundle_fixture.hpp"
#include "common/zstd_raii.hpp"
#include "fixtures.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"

using namespace gb;
using namespace gb::bundles;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;
using gbtest::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;
using Edit = std::function<void(json&)>;

namespace {

const std::string k_ref = "nvcr.io/nvidia/driver:580";

// One payload entry of a crafted bundle.
struct Piece {
  std::string path;
  std::string data;  // stored bytes
  int volume = 1;
  std::string blob;  // "sha256:..." or ""
  std::string encoding;
  int part = 0, parts = 0;
};

std::string oci_manifest(const std::string& config, const std::vector<std::string>& layers) {
  auto desc = [](const std::string& media, const std::string& b) {
    return "{\"mediaType\":\"" + media + "\",\"digest\":\"" + sha256_digest(b) + "\",\"size\":" + std::to_string(b.size()) + "}";
  };
  std::string s = "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(oci::k_oci_manifest) +
                   "\",\"config\":" + desc("application/vnd.oci.image.config.v1+json", config) + ",\"layers\":[";
  for (size_t i = 0; i < layers.size(); ++i) s += (i ? "," : "") + desc("application/vnd.oci.image.layer.v1.tar", layers[i]);
  return s + "]}";
}

std::string oci_index(const std::string& child, std::string_view child_type) {
  return "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(oci::k_oci_index) + "\",\"manifests\":[{\"mediaType\":\"" +
         std::string(child_type) + "\",\"digest\":\"" + sha256_digest(child) + "\",\"size\":" + std::to_string(child.size()) + "}]}";
}

Piece blob_piece(const std::string& content, int volume = 1) {
  return {"oci/blobs/sha256/" + sha256_hex(content), content, volume, sha256_digest(content), "", 0, 0};
}

// A bundle of one image: its manifest, config and layer, each stored whole.
struct Crafted {
  VolumeManifest m;
  std::vector<Piece> pieces;

  explicit Crafted(const std::string& layer = std::string(3000, 'L')) {
    std::string config = R"({"architecture":"amd64","os":"linux"})";
    std::string manifest = oci_manifest(config, {layer});
    pieces = {blob_piece(config), blob_piece(layer), blob_piece(manifest)};
    Lock lock;
    lock.generator = "test";
    lock.recipe_name = "t";
    lock.chart = {"gpu-operator", "v24.9.2", "v24.9.2", "test", ""};
    lock.driver.mode = "conventional";
    LockImage li;
    li.components = {"driver"};
    li.source = k_ref;
    li.digest = sha256_digest(manifest);
    lock.images.push_back(li);
    m.bundle_id = "0123456789abcdef";
    m.tool = "gpubundle test";
    m.lock_json = lock_to_json(lock);
    m.images = {{k_ref, std::string(oci::k_oci_manifest), sha256_digest(manifest), {"linux/amd64"},
                 {sha256_digest(manifest), sha256_digest(config), sha256_digest(layer)}}};
  }

  // The manifest's "files" from the pieces (unless `edit` changes them after).
  VolumeManifest manifest(int volumes) const {
    VolumeManifest out = m;
    out.volumes = volumes;
    out.files.clear();
    for (const auto& p : pieces) out.files.push_back({p.path, p.data.size(), sha256_hex(p.data), p.volume, p.blob, p.encoding, p.part, p.parts});
    return out;
  }

  // Writes volume files; `edit` changes each manifest first.
  std::vector<fs::path> write(const fs::path& first, int volumes, const Edit& edit = {}) const {
    std::vector<fs::path> out;
    for (int v = 1; v <= volumes; ++v) {
      VolumeManifest vm = manifest(volumes);
      vm.volume = v;
      json j = json::parse(manifest_to_json(vm));
      if (edit) edit(j);
      std::string text = j.dump(1);
      fs::path path = volume_path(first, v, volumes);
      std::vector<gbtest::TarEntry> entries = {{std::string(k_volume_manifest), text, AE_IFREG, ""},
                                               {std::string(k_volume_signature), "unsigned\n", AE_IFREG, ""}};
      for (const auto& p : pieces)
        if (p.volume == v) entries.push_back({p.path, p.data, AE_IFREG, ""});
      gbtest::write_tar(path, entries);
      out.push_back(path);
    }
    return out;
  }
};

VerifyReport verify_unsigned(const std::vector<fs::path>& volumes) { return verify_bundle(volumes, VerifyOptions{}); }

std::string all(const VerifyReport& r) {
  std::string s;
  for (const auto& p : r.problems) s += p + "\n";
  return s;
}

bool report_mentions(const VerifyReport& r, const std::string& text) { return all(r).find(text) != std::string::npos; }

std::string parse_error(const VolumeManifest& m, const Edit& edit) {
  json j = json::parse(manifest_to_json(m));
  edit(j);
  auto r = parse_volume_manifest(j.dump(), "v");
  return r ? std::string() : r.error().message;
}

// The first file whose "part" is [n, ...].
json& part(json& j, int n) {
  for (auto& f : j["files"])
    if (f["part"].is_array() && f["part"][0] == n) return f;
  FAIL("no part " << n);
  return j;
}

// Splits piece `i` into `n` parts, in volumes 1..n.
void split(Crafted& c, std::size_t i, int n) {
  Piece whole = c.pieces[i];
  c.pieces.erase(c.pieces.begin() + static_cast<long>(i));
  std::size_t step = (whole.data.size() + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
  for (int k = 1; k <= n; ++k) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, ".part%04d", k);
    Piece p = whole;
    p.path += suffix;
    p.data = whole.data.substr(static_cast<std::size_t>(k - 1) * step, step);
    p.volume = k;
    p.part = k;
    p.parts = n;
    c.pieces.push_back(p);
  }
}

std::string zstd_frame(const std::string& content, bool declare_size) {
  std::string out(ZSTD_compressBound(content.size()) + 64, '\0');
  gb::detail::ZstdCCtx c(ZSTD_createCCtx());
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_contentSizeFlag, declare_size ? 1 : 0);
  std::size_t n = ZSTD_compress2(c.get(), out.data(), out.size(), content.data(), content.size());
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

}  // namespace

TEST_CASE("a crafted bundle the reader must accept", "[bundle][hostile]") {
  TempDir dir;
  Crafted c;
  auto r = verify_unsigned(c.write(dir / "ok.bundle", 1));
  INFO(all(r));
  CHECK(r.problems.empty());
  split(c, 1, 3);  // the layer in three parts over three volumes
  auto vols = c.write(dir / "s.bundle", 3);
  std::reverse(vols.begin(), vols.end());
  auto s = verify_unsigned(vols);
  INFO(all(s));
  CHECK(s.problems.empty());
}

TEST_CASE("part numbers outside 1..N are refused, not used as an index (issue 11.1)", "[bundle][hostile]") {
  TempDir dir;
  Crafted c;
  split(c, 1, 2);
  struct Case {
    int which;
    json value;
    std::string why;
  };
  for (const auto& k : std::vector<Case>{
           {1, {0, 2}, "part number 0 is out of range 1..2"},
           {1, {-1, 2}, "part number -1 is out of range"},
           {2, {7, 2}, "part number 7 is out of range"},
           {2, {2, 1}, "part number 2 is out of range 1..1"},
           {2, {1, 2}, "is part 1 but not named .part0001"},
           {1, {1, 2147483647}, "part count 2147483647 is out of range"},
       }) {
    INFO(k.value.dump());
    auto vols = c.write(dir / "p.bundle", 2, [&](json& j) { part(j, k.which)["part"] = k.value; });
    auto r = verify_unsigned(vols);
    CHECK(report_mentions(r, k.why));
  }
  // Even a report that claims such parts cannot make BundleBlobs index out of range.
  VerifyReport forged;
  forged.manifest = c.manifest(2);
  for (auto& f : forged.manifest.files) {
    forged.locations[f.path] = {dir / "p.bundle.001", 0};
    if (f.parts) f.part = 0;
  }
  auto blobs = BundleBlobs::from(forged);
  REQUIRE_FALSE(blobs.ok());
  CHECK(blobs.error().message.find("is impossible") != std::string::npos);
}

TEST_CASE("a huge volume count is refused before anything is sized by it (issue 11.3)", "[bundle][hostile]") {
  TempDir dir;
  Crafted c;
  std::clock_t t0 = std::clock();  // CPU time: the machine may be loaded
  auto huge = verify_unsigned(c.write(dir / "h.bundle", 1, [](json& j) { j["volume"]["count"] = 2147483647; }));
  CHECK(report_mentions(huge, "volume.count 2147483647 is out of range 1..9999"));
  // The largest allowed count: one line, quickly, naming a few absent volumes.
  auto most = verify_unsigned(c.write(dir / "m.bundle", 1, [](json& j) { j["volume"]["count"] = 9999; }));
  REQUIRE(most.problems.size() == 1);
  CHECK(most.problems[0].size() < 200);
  CHECK(report_mentions(most, "(9998 in all) of 9999 not given"));
  CHECK(std::clock() - t0 < 5 * CLOCKS_PER_SEC);
}

TEST_CASE("index nesting deeper than the OCI limit is refused without recursion (issue 11.4)", "[bundle][hostile]") {
  TempDir dir;
  auto nested = [&](int depth) {
    Crafted c;
    std::string top = c.pieces[2].data;  // the image manifest
    std::string_view type = oci::k_oci_manifest;
    for (int i = 0; i < depth; ++i) {
      top = oci_index(top, type);
      type = oci::k_oci_index;
      c.pieces.push_back(blob_piece(top));
      c.m.images[0].blobs.push_back(sha256_digest(top));
    }
    c.m.images[0].digest = sha256_digest(top);
    c.m.images[0].media_type = depth ? std::string(oci::k_oci_index) : std::string(oci::k_oci_manifest);
    Lock lock = parse_lock(c.m.lock_json, "l").value_or_throw();  // the signed lock names what the bundle carries
    lock.images[0].digest = sha256_digest(top);
    c.m.lock_json = lock_to_json(lock);
    return c;
  };
  auto ok = verify_unsigned(nested(oci::k_max_index_depth).write(dir / "ok.bundle", 1));
  INFO(all(ok));
  CHECK(ok.problems.empty());
  auto deep = verify_unsigned(nested(oci::k_max_index_depth + 1).write(dir / "deep.bundle", 1));
  CHECK(report_mentions(deep, "nests deeper than 8 levels"));
  // Far deeper than a stack survives when walked recursively (13,000 crashed).
  auto very = verify_unsigned(nested(3000).write(dir / "very.bundle", 1));
  CHECK(report_mentions(very, "nests deeper than 8 levels"));
}

TEST_CASE("volumes of two writes, doubled and swapped parts are refused (issue 11.6)", "[bundle][hostile]") {
  TempDir dir;
  Crafted three(std::string(1500, 'A') + std::string(1500, 'B'));
  Crafted other = three;
  split(three, 1, 3);
  split(other, 0, 3);  // another write of the same content: the config in parts instead
  auto b = three.write(dir / "b.bundle", 3);
  auto o = other.write(dir / "o.bundle", 3);
  CHECK(verify_unsigned(b).problems.empty());
  CHECK(verify_unsigned(o).problems.empty());
  // Same bundle id, same volume count: only the layout tells them apart.
  auto mixed = verify_unsigned({b[0], o[1], o[2]});
  CHECK(report_mentions(mixed, "volumes of two writes of bundle 0123456789abcdef are mixed"));

  Crafted two(std::string(1500, 'A') + std::string(1500, 'B'));
  split(two, 1, 2);
  // Doubled part: part 1 again in place of part 2.
  auto d = verify_unsigned(two.write(dir / "d.bundle", 2, [](json& j) {
    json one = part(j, 1);
    one["volume"] = 2;
    part(j, 2) = one;
  }));
  CHECK(report_mentions(d, "is listed twice"));
  // Swapped parts: each part's own sha256 is right, their order is not.
  Crafted swapped = two;
  for (auto& p : swapped.pieces)
    if (p.part) p.data = std::string(1500, p.part == 1 ? 'B' : 'A');
  auto sw = swapped.write(dir / "sw.bundle", 2);
  auto s = verify_unsigned(sw);
  INFO(all(s));
  CHECK(report_mentions(s, "content does not match its digest (joined from its 2 parts)"));
  std::reverse(sw.begin(), sw.end());
  CHECK(report_mentions(verify_unsigned(sw), "content does not match its digest (joined from its 2 parts)"));
  // Three parts over three volumes, the outer two swapped, given out of order.
  Crafted outer = three;
  for (auto& p : outer.pieces)
    if (p.part == 1 || p.part == 3) p.data = std::string(1000, p.part == 1 ? 'B' : 'A');
  auto ov = outer.write(dir / "ov.bundle", 3);
  auto o3 = verify_unsigned({ov[2], ov[0], ov[1]});
  INFO(all(o3));
  CHECK(report_mentions(o3, "content does not match its digest (joined from its 3 parts)"));
  // With hashing deferred (import) the closure never reads the layer; hashing
  // it on request catches the swap, and it stays unreadable.
  VerifyOptions lazy;
  lazy.defer_blobs = true;
  auto deferred = verify_bundle({ov[1], ov[2], ov[0]}, lazy);
  INFO(all(deferred));
  CHECK(deferred.problems.empty());
  std::string layer = outer.m.images[0].blobs[2];
  hash_blobs(deferred, {layer});
  CHECK(report_mentions(deferred, "blob " + layer + ": content does not match its digest (joined from its 3 parts)"));
  CHECK_FALSE(BundleBlobs::from(deferred).value_or_throw().find(layer));
}

TEST_CASE("a zstd entry decodes to its declared size at most (issue 11.8)", "[bundle][hostile]") {
  TempDir dir;
  auto with_layer = [&](const std::string& stored, const std::string& content) {
    Crafted x(content);
    x.pieces[1].data = stored;
    x.pieces[1].path += ".zst";
    x.pieces[1].encoding = "zstd";
    return x;
  };
  // 64 MiB of zeros in a few KiB: refused from the frame header, before decoding.
  std::string big(64 << 20, '\0');
  auto bombs = with_layer(zstd_frame(big, true), big).write(dir / "bomb.bundle", 1);
  auto quiets = with_layer(zstd_frame(big, false), big).write(dir / "quiet.bundle", 1);
  std::clock_t t0 = std::clock();  // CPU time of the reader alone: the machine may be loaded
  auto bomb = verify_unsigned(bombs);
  CHECK(report_mentions(bomb, "the frame declares 67108864 bytes, more than the 16777216"));
  auto quiet = verify_unsigned(quiets);
  CHECK(report_mentions(quiet, "does not declare its content size"));
  CHECK(std::clock() - t0 < 5 * CLOCKS_PER_SEC);

  // A good zstd blob streams back, in chunks and again from the start.
  std::string content;
  for (int i = 0; i < 200000; ++i) content += std::to_string(i) + ",";
  Crafted good = with_layer(zstd_frame(content, true), content);
  auto vols = good.write(dir / "z.bundle", 1);
  auto r = verify_unsigned(vols);
  INFO(all(r));
  REQUIRE(r.problems.empty());
  auto blobs = BundleBlobs::from(r).value_or_throw();
  const BundleBlob* b = blobs.find(sha256_digest(content));
  REQUIRE(b);
  std::uint64_t stored = 0;
  auto src = BundleBlobs::content_source(*b, [&](std::uint64_t n) { stored += n; }).value_or_throw();
  REQUIRE(src->size() == content.size());
  std::string back(content.size(), '\0');
  for (std::uint64_t at = 0; at < content.size();) at += src->read(at, back.data() + at, 4096).value_or_throw();
  CHECK(back == content);
  CHECK(stored == b->stored_size());
  std::string again(100, '\0');  // a retry reads from the start again
  REQUIRE(src->read(1000, again.data(), again.size()).value_or_throw() > 0);
  CHECK(again.substr(0, 10) == content.substr(1000, 10));
  CHECK(stored == b->stored_size());  // counted once
}

TEST_CASE("verify checks every field import and export rely on (issue 11.9)", "[bundle][hostile]") {
  Crafted c;
  VolumeManifest m = c.manifest(1);
  auto file = [](json& j, const std::string& suffix) -> json& {
    for (auto& f : j["files"])
      if (f["path"].get<std::string>().find(suffix) != std::string::npos) return f;
    FAIL("no file " << suffix);
    return j;
  };
  auto says = [&](const Edit& edit, const std::string& text) {
    std::string e = parse_error(m, edit);
    INFO(e);
    CHECK(e.find(text) != std::string::npos);
  };
  CHECK(parse_error(m, [](json&) {}).empty());
  says([](json& j) { j["formatVersion"] = std::uint64_t{1} << 40; }, "formatVersion 1099511627776 is out of range");
  says([](json& j) { j["formatVersion"] = 0; }, "formatVersion 0 is out of range");
  says([](json& j) { j["formatVersion"] = 2; }, "bundle format 2 is newer");
  says([&](json& j) { file(j, "")["encoding"] = "gzip"; }, "unknown encoding 'gzip'");
  says([](json& j) { j["lock"]["schemaVersion"] = 99; }, "lock schema 99");
  says([](json& j) { j["lock"] = json::array({1}); }, "lock is not an object");
  says([](json& j) { j["lock"]["chart"]["name"] = "../../etc/x"; }, "chart.name: '../../etc/x' is not a chart name");
  says([&](json& j) { file(j, "")["path"] = "../x"; }, "has a '..' component");
  says([&](json& j) { file(j, "")["path"] = std::string(2000, 'a'); }, "is longer than 1024 bytes");
  says([&](json& j) { file(j, "")["size"] = -3000; }, "size is not a count of bytes");
  says([&](json& j) { file(j, "")["volume"] = 4294967297LL; }, "volume 4294967297 is out of range");
  says([&](json& j) { file(j, "")["sha256"] = "zz"; }, "sha256 is not 64 lowercase hex digits");
  says([](json& j) { j["images"][0]["ref"] = "evil.io/x:1"; }, "image evil.io/x:1 is not in the bundle's lock");
  says([](json& j) { j["images"][0]["mediaType"] = "text/html"; }, "is not a manifest or index type");
  says([&](json& j) { file(j, "")["blob"] = "sha512:../../../etc/hostname"; }, "is not a sha256 digest");
  says([](json& j) { j["bundleId"] = "../x"; }, "bundleId is not 16 hex digits");
  // The same blob stored twice is refused (import would not know which to push).
  Crafted twice;
  twice.pieces.push_back(twice.pieces[0]);
  twice.pieces.back().path += ".copy";
  CHECK(parse_error(twice.manifest(1), [](json&) {}).find("is stored twice") != std::string::npos);
}

TEST_CASE("a missing volume file is bad input (exit 2) for every bundle command (issue 11.14)", "[bundle][hostile]") {
  TempDir dir;
  auto r = require_volume_files({dir / "nope.bundle"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message == (dir / "nope.bundle").string() + ": no such file");
  auto m = read_volume_manifest(dir / "nope.bundle");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().kind == ErrorKind::Input);
  CHECK_FALSE(require_volume_files({dir.path()}).ok());
}

TEST_CASE("a filtered index must be what its upstream index and platforms make", "[bundle][hostile]") {
  TempDir dir;
  Crafted c;
  // Upstream: the crafted amd64 manifest plus an arm64 child the bundle leaves out.
  std::string amd = c.pieces[2].data;
  std::string upstream = "{\"schemaVersion\":2,\"mediaType\":\"" + std::string(oci::k_oci_index) + "\",\"manifests\":[" +
                         "{\"mediaType\":\"" + std::string(oci::k_oci_manifest) + "\",\"digest\":\"" + sha256_digest(amd) + "\",\"size\":" +
                         std::to_string(amd.size()) + ",\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}}," +
                         "{\"mediaType\":\"" + std::string(oci::k_oci_manifest) + "\",\"digest\":\"sha256:" + std::string(64, 'e') +
                         "\",\"size\":9,\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\"}}]}";
  auto filtered = oci::site_index(oci::parse_manifest(upstream, oci::k_oci_index).value_or_throw(), {"linux/amd64"}).value_or_throw();
  REQUIRE(filtered);
  auto make = [&](const std::string& site_bytes, const std::string& lock_site) {
    Crafted x = c;
    x.pieces.push_back(blob_piece(upstream));
    x.pieces.push_back(blob_piece(site_bytes));
    Lock lock = parse_lock(x.m.lock_json, "l").value_or_throw();
    lock.images[0].digest = sha256_digest(upstream);
    lock.images[0].site_digest = lock_site;
    x.m.lock_json = lock_to_json(lock);
    BundleImage& img = x.m.images[0];
    img.media_type = std::string(oci::k_oci_index);
    img.digest = sha256_digest(site_bytes);
    img.upstream_digest = sha256_digest(upstream);
    img.blobs.push_back(img.digest);
    img.blobs.push_back(img.upstream_digest);
    return x;
  };
  SECTION("made by the rule: accepted") {
    auto r = verify_unsigned(make(filtered->bytes, filtered->digest).write(dir / "ok.bundle", 1));
    INFO(all(r));
    CHECK(r.problems.empty());
  }
  SECTION("the same children written another way: refused") {
    std::string pretty = json::parse(filtered->bytes).dump(2);
    auto r = verify_unsigned(make(pretty, sha256_digest(pretty)).write(dir / "pretty.bundle", 1));
    CHECK(report_mentions(r, "is not what upstream index " + sha256_digest(upstream) + " filtered to linux/amd64 gives (" + filtered->digest + ")"));
  }
  SECTION("a filtered index naming what the bundle lacks: refused") {
    auto other = oci::filter_index(oci::parse_manifest(upstream, oci::k_oci_index).value_or_throw(), {"sha256:" + std::string(64, 'e')})
                     .value_or_throw();
    REQUIRE(other);
    auto r = verify_unsigned(make(other->bytes, other->digest).write(dir / "arm.bundle", 1));
    CHECK(report_mentions(r, "which the bundle does not list"));
  }
  SECTION("the lock naming another site digest: refused") {
    auto r = verify_unsigned(make(filtered->bytes, sha256_digest("elsewhere")).write(dir / "lock.bundle", 1));
    CHECK(report_mentions(r, "but its lock says " + sha256_digest("elsewhere")));
  }
  SECTION("upstreamDigest on a plain manifest, or not among the blobs: refused when read") {
    CHECK(parse_error(make(filtered->bytes, filtered->digest).manifest(1), [](json& j) { j["images"][0]["mediaType"] = std::string(oci::k_oci_manifest); })
              .find("upstreamDigest is only for an index") != std::string::npos);
    CHECK(parse_error(make(filtered->bytes, filtered->digest).manifest(1), [](json& j) { j["images"][0]["blobs"].erase(4); })
              .find("is not among its blobs") != std::string::npos);
  }
}
