#include <algorithm>
#include <catch2/catch.hpp>
#include <archive.h>
#include <archive_entry.h>

#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "common/progress.hpp"
#include "bundle_fixture.hpp"
#include "fixtures.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"

using namespace gb;
using namespace gb::bundles;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;
using gbtest::TempDir;
namespace fs = std::filesystem;

namespace {

// The store of tests/unit/bundle_fixture.hpp (three images and the chart),
// with a fresh signing key.
struct Fixture {
  TempDir dir;
  fs::path store_dir = dir / "store";
  Lock lock;
  std::string base, big, tarlayer;
  PrivateKey key = PrivateKey::generate(KeyType::Ed25519).value_or_throw();
  Keyring trusted = Keyring::of(key.public_key());

  Fixture() {
    Store store = Store::open(store_dir, StoreAccess::Exclusive).value_or_throw();
    auto b = gbtest::fill_bundle_store(store, 300 << 10, 700 << 10, 200 << 10);
    lock = std::move(b.lock);
    base = std::move(b.base);
    big = std::move(b.big);
    tarlayer = std::move(b.tarlayer);
  }

  CreateReport create(const fs::path& out, CreateOptions o = {}) {
    Store store = Store::open(store_dir, StoreAccess::Shared).value_or_throw();
    o.output = out;
    auto progress = make_progress(ProgressStyle::None);
    return create_bundle(store, lock, key, o, *progress).value_or_throw();
  }

  VerifyReport verify(const std::vector<fs::path>& files, const Keyring* keys = nullptr) const {
    VerifyOptions o;
    o.trusted = keys ? keys : &trusted;
    return verify_bundle(files, o);
  }
};

bool mentions(const VerifyReport& r, const std::string& text) {
  for (const auto& p : r.problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

std::string problems(const VerifyReport& r) {
  std::string s;
  for (const auto& p : r.problems) s += p + "\n";
  return s;
}

using gbtest::read_tar;
using gbtest::TarEntry;
using gbtest::write_tar;

}  // namespace

TEST_CASE("a bundle round-trips and verifies", "[bundle]") {
  Fixture f;
  auto report = f.create(f.dir / "b.bundle");
  REQUIRE(report.volumes.size() == 1);
  CHECK(report.blobs == 11);  // 3 top manifests + the filtered index + 1 child + 3 configs + 3 layers
  CHECK(report.bytes_saved_by_zstd > 100000);  // the uncompressed tar layer
  auto r = f.verify({f.dir / "b.bundle"});
  INFO(problems(r));
  CHECK(r.problems.empty());
  CHECK(r.signer == f.key.id());
  CHECK(r.bundle_id == report.bundle_id);

  auto m = read_volume_manifest(f.dir / "b.bundle").value_or_throw();
  REQUIRE(m.images.size() == 3);
  CHECK(m.images[0].ref == "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04");
  // Sparse: the arm64 child is not in the store, so not in the bundle.
  CHECK(std::find(m.images[0].blobs.begin(), m.images[0].blobs.end(), "sha256:" + std::string(64, 'e')) == m.images[0].blobs.end());
  auto entries = read_tar(f.dir / "b.bundle");
  REQUIRE(entries.size() >= 3);
  CHECK(entries[0].path == "gpubundle.json");
  CHECK(entries[1].path == "gpubundle.json.sig");
  for (size_t i = 3; i < entries.size(); ++i) CHECK(entries[i - 1].path < entries[i].path);
  bool zst = false;
  for (const auto& e : entries) zst = zst || e.path == "oci/blobs/sha256/" + sha256_hex(f.tarlayer) + ".zst";
  CHECK(zst);
  // Layers that are already compressed are stored as they are.
  bool raw = false;
  for (const auto& e : entries) raw = raw || (e.path == "oci/blobs/sha256/" + sha256_hex(f.big) && e.data == f.big);
  CHECK(raw);
}

TEST_CASE("the same store, lock and key give a byte-identical bundle", "[bundle]") {
  Fixture f;
  f.create(f.dir / "one.bundle");
  f.create(f.dir / "two.bundle");
  CHECK(gbtest::slurp(f.dir / "one.bundle") == gbtest::slurp(f.dir / "two.bundle"));
  CreateOptions o;
  o.mtime = 1700000000;
  o.created = "2023-11-14T22:13:20Z";
  f.create(f.dir / "three.bundle", o);
  auto m = read_volume_manifest(f.dir / "three.bundle").value_or_throw();
  CHECK(m.created == "2023-11-14T22:13:20Z");
}

TEST_CASE("every tamper class is refused with its own message", "[bundle][tamper]") {
  Fixture f;
  fs::path good = f.dir / "good.bundle";
  f.create(good);
  const auto entries = read_tar(good);
  auto variant = [&](const std::string& name, const std::function<void(std::vector<TarEntry>&)>& edit) {
    auto copy = entries;
    edit(copy);
    fs::path p = f.dir / name;
    write_tar(p, copy);
    return f.verify({p});
  };
  auto find = [](std::vector<TarEntry>& es, const std::string& prefix) -> TarEntry& {
    for (auto& e : es)
      if (e.path.rfind(prefix, 0) == 0) return e;
    FAIL("no entry " << prefix);
    return es.front();
  };

  // Re-writing the tar with libarchive alone must not break anything.
  CHECK(variant("same.bundle", [](auto&) {}).problems.empty());

  auto blob = variant("blob.bundle", [&](auto& es) { find(es, "oci/blobs/sha256/" + sha256_hex(f.big)).data[1000] ^= 1; });
  CHECK(mentions(blob, "oci/blobs/sha256/" + sha256_hex(f.big) + ": sha256"));

  auto manifest = variant("manifest.bundle", [&](auto& es) {
    auto& m = find(es, "gpubundle.json");
    m.data.replace(m.data.find("gpubundle 0"), 11, "gpubundle 9");
  });
  CHECK(mentions(manifest, "signature:"));
  CHECK(manifest.problems.size() == 1);

  auto sig = variant("sig.bundle", [&](auto& es) {
    auto& s = find(es, "gpubundle.json.sig");
    auto pos = s.data.find("\"signature\":\"") + 14;
    s.data[pos] = s.data[pos] == 'A' ? 'B' : 'A';
  });
  CHECK(mentions(sig, "signature:"));

  auto other = PrivateKey::generate(KeyType::Ed25519).value_or_throw();
  Keyring others = Keyring::of(other.public_key());
  auto wrong_key = f.verify({good}, &others);
  CHECK(mentions(wrong_key, "signature:"));
  CHECK(mentions(wrong_key, f.key.id().substr(0, 16)));

  auto appended = variant("appended.bundle", [](auto& es) { es.push_back({"oci/blobs/sha256/extra", "evil", AE_IFREG, ""}); });
  CHECK(mentions(appended, "entry oci/blobs/sha256/extra is not in the signed manifest"));

  auto dotdot = variant("dotdot.bundle", [](auto& es) { es.push_back({"oci/../../etc/cron.d/x", "evil", AE_IFREG, ""}); });
  CHECK(mentions(dotdot, "has a '..' component"));

  auto absolute = variant("abs.bundle", [](auto& es) { es.push_back({"/etc/passwd", "evil", AE_IFREG, ""}); });
  CHECK(mentions(absolute, "has an absolute path"));

  auto symlink = variant("symlink.bundle", [](auto& es) { es.push_back({"oci/link", "", AE_IFLNK, "/etc/shadow"}); });
  CHECK(mentions(symlink, "entry oci/link is a symbolic link"));

  auto duplicate = variant("dup.bundle", [&](auto& es) { es.push_back(find(es, "lock.json")); });
  CHECK(mentions(duplicate, "entry lock.json appears twice"));

  auto dropped = variant("dropped.bundle", [&](auto& es) {
    es.erase(std::remove_if(es.begin(), es.end(), [](const TarEntry& e) { return e.path == "oci/index.json"; }), es.end());
  });
  CHECK(mentions(dropped, "truncated: 1 entry of the manifest missing, first oci/index.json"));

  // Cut the file in the middle of a blob.
  std::string bytes = gbtest::slurp(good);
  gbtest::spit(f.dir / "cut.bundle", bytes.substr(0, bytes.size() / 2));
  auto cut = f.verify({f.dir / "cut.bundle"});
  CHECK(mentions(cut, "truncated"));
  CHECK_FALSE(cut.problems.empty());
}

TEST_CASE("split volumes are cut while writing and verify in any order", "[bundle][split]") {
  Fixture f;
  CreateOptions o;
  o.split_bytes = 400 << 10;  // the 700 KiB layer must be cut into parts
  auto report = f.create(f.dir / "s.bundle", o);
  REQUIRE(report.volumes.size() >= 3);
  for (const auto& v : report.volumes) CHECK(fs::file_size(v) <= o.split_bytes);
  CHECK_FALSE(fs::exists(f.dir / "s.bundle"));
  auto m = read_volume_manifest(report.volumes.back()).value_or_throw();
  int parts = 0;
  for (const auto& file : m.files) parts += file.parts > 0;
  CHECK(parts >= 2);

  std::vector<fs::path> shuffled = report.volumes;
  std::reverse(shuffled.begin(), shuffled.end());
  std::rotate(shuffled.begin(), shuffled.begin() + 1, shuffled.end());
  auto r = f.verify(shuffled);
  INFO(problems(r));
  CHECK(r.problems.empty());
  CHECK(static_cast<int>(r.volumes_seen.size()) == m.volumes);

  // Each volume alone checks out, and says what it cannot check.
  auto one = f.verify({report.volumes[1]});
  REQUIRE(one.problems.size() == 1);
  CHECK(one.problems[0].find("not given; completeness and the image closure are unchecked") != std::string::npos);
  // A volume given twice, and a volume of another bundle, are refused.
  CHECK(mentions(f.verify({report.volumes[0], report.volumes[0]}), "given twice"));
  f.create(f.dir / "plain.bundle");
  CHECK(mentions(f.verify({report.volumes[0], f.dir / "plain.bundle"}), "volumes of two writes of bundle"));
  CreateOptions delta;
  delta.have_blobs = {sha256_digest(f.base)};
  f.create(f.dir / "other.bundle", delta);
  CHECK(mentions(f.verify({report.volumes[0], f.dir / "other.bundle"}), "belongs to bundle"));
  // The same content gives the same bundle id, split or not.
  CHECK(read_volume_manifest(f.dir / "plain.bundle")->bundle_id == report.bundle_id);

  // Writing unsplit again at the same name removes nothing it should not, and
  // a smaller split removes the now-stale higher volumes.
  CreateOptions bigger;
  bigger.split_bytes = 4 << 20;
  auto fewer = f.create(f.dir / "s.bundle", bigger);
  CHECK(fewer.volumes.size() == 1);
  CHECK_FALSE(fs::exists(report.volumes.back()));

  CreateOptions tiny;
  tiny.split_bytes = 100 << 10;
  Store store = Store::open(f.store_dir, StoreAccess::Shared).value_or_throw();
  tiny.output = f.dir / "tiny.bundle";
  auto progress = make_progress(ProgressStyle::None);
  auto refused = create_bundle(store, f.lock, f.key, tiny, *progress);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("is too small") != std::string::npos);
}

TEST_CASE("a delta ships only what the site lacks, plus every manifest", "[bundle][delta]") {
  Fixture f;
  CreateOptions o;
  o.have_blobs = {sha256_digest(f.base), sha256_digest(f.big)};
  o.delta_base = "site.inventory.json";
  auto report = f.create(f.dir / "d.bundle", o);
  CHECK(report.blobs_omitted == 2);
  auto full = f.create(f.dir / "full.bundle");
  CHECK(fs::file_size(f.dir / "d.bundle") + 900000 < fs::file_size(f.dir / "full.bundle"));
  auto r = f.verify({f.dir / "d.bundle"});
  INFO(problems(r));
  CHECK(r.problems.empty());
  auto m = read_volume_manifest(f.dir / "d.bundle").value_or_throw();
  CHECK(m.delta);
  CHECK(m.omitted.size() == 2);
  CHECK(m.bundle_id != full.bundle_id);
}

TEST_CASE("bundle create refuses an unmirrored lock", "[bundle]") {
  Fixture f;
  f.lock.images[1].digest.clear();
  Store store = Store::open(f.store_dir, StoreAccess::Shared).value_or_throw();
  CreateOptions o;
  o.output = f.dir / "x.bundle";
  auto progress = make_progress(ProgressStyle::None);
  auto r = create_bundle(store, f.lock, f.key, o, *progress);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "lock image nvcr.io/nvidia/k8s-device-plugin:v0.17.0 has no digest: run `gpubundle mirror` first");
  CHECK_FALSE(fs::exists(f.dir / "x.bundle"));
  f.lock.images[1].digest = "sha256:" + std::string(64, '1');
  r = create_bundle(store, f.lock, f.key, o, *progress);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("the store has sha256:") != std::string::npos);
}

TEST_CASE("bundle create refuses a lock whose site package repository was never made", "[bundle][package-repo]") {
  Fixture f;
  f.lock.images[1].components = {k_package_server_component};
  Store store = Store::open(f.store_dir, StoreAccess::Shared).value_or_throw();
  CreateOptions o;
  o.output = f.dir / "x.bundle";
  auto progress = make_progress(ProgressStyle::None);
  auto r = create_bundle(store, f.lock, f.key, o, *progress);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message == "lock lists the package server image " + f.lock.images[1].source +
                                 " but no site package repository: make it with `gpubundle build` from the recipe");
  CHECK_FALSE(fs::exists(f.dir / "x.bundle"));
}

TEST_CASE("volume files are numbered only when there are several", "[bundle]") {
  CHECK(volume_path("a.bundle", 2, 3).string() == "a.bundle.002");
  CHECK(volume_path("a.bundle", 1, 1).string() == "a.bundle");
}

TEST_CASE("deferred hashing reads a blob only when asked, and nothing unhashed is readable", "[bundle][import]") {
  Fixture f;
  fs::path good = f.dir / "b.bundle";
  f.create(good);
  const std::string big = sha256_digest(f.big), base = sha256_digest(f.base);
  auto m = read_volume_manifest(good).value_or_throw();
  std::uint64_t layers = 0;  // stored bytes of the two blobs
  for (const auto& file : m.files)
    if (file.blob == big || file.blob == base) layers += file.size;

  VerifyOptions lazy;
  lazy.trusted = &f.trusted;
  lazy.defer_blobs = true;
  auto r = verify_bundle({good}, lazy);
  INFO(problems(r));
  REQUIRE(r.problems.empty());
  CHECK(r.unhashed.count("oci/blobs/sha256/" + sha256_hex(f.big)));
  CHECK(r.bytes + f.big.size() + f.base.size() < fs::file_size(good));  // neither layer was read
  auto blobs = BundleBlobs::from(r).value_or_throw();
  CHECK_FALSE(blobs.find(big));
  CHECK(blobs.find(f.lock.images[0].digest));  // manifests are read by the closure check, so hashed
  std::uint64_t before = r.bytes;
  hash_blobs(r, {big, base});
  CHECK(r.problems.empty());
  CHECK(r.bytes - before == layers);
  CHECK(BundleBlobs::from(r).value_or_throw().content(big).value_or_throw() == f.big);

  // A flipped byte in the big layer: not read, so not seen, until asked for.
  std::string bytes = gbtest::slurp(good);
  auto at = bytes.find(f.big.substr(5000, 64));
  REQUIRE(at != std::string::npos);
  bytes[at] ^= 1;
  fs::path bad = f.dir / "bad.bundle";
  gbtest::spit(bad, bytes);
  CHECK(mentions(f.verify({bad}), "oci/blobs/sha256/" + sha256_hex(f.big) + ": sha256"));
  auto d = verify_bundle({bad}, lazy);
  INFO(problems(d));
  CHECK(d.problems.empty());
  hash_blobs(d, {base});
  CHECK(d.problems.empty());
  hash_blobs(d, {big});
  CHECK(mentions(d, "oci/blobs/sha256/" + sha256_hex(f.big) + ": sha256"));
  auto after = BundleBlobs::from(d).value_or_throw();
  CHECK_FALSE(after.find(big));
  CHECK(after.find(base));
}

TEST_CASE("a blob in parts is hashed on request as one stream over its volumes", "[bundle][split][import]") {
  Fixture f;
  CreateOptions o;
  o.split_bytes = 400 << 10;
  auto report = f.create(f.dir / "s.bundle", o);
  std::vector<fs::path> shuffled = report.volumes;
  std::reverse(shuffled.begin(), shuffled.end());
  VerifyOptions lazy;
  lazy.trusted = &f.trusted;
  lazy.defer_blobs = true;
  auto r = verify_bundle(shuffled, lazy);
  INFO(problems(r));
  REQUIRE(r.problems.empty());
  const std::string big = sha256_digest(f.big);
  CHECK_FALSE(BundleBlobs::from(r).value_or_throw().find(big));
  hash_blobs(r, {big});
  CHECK(r.problems.empty());
  auto blobs = BundleBlobs::from(r).value_or_throw();
  REQUIRE(blobs.find(big));
  CHECK(blobs.find(big)->segments.size() >= 2);
  CHECK(blobs.content(big).value_or_throw() == f.big);
}

TEST_CASE("a lock with a network section carries the network-operator chart too, or is refused without it", "[bundle][network]") {
  Fixture f;
  f.lock.network = LockNetwork{"v26.4.1", {"network-operator", "26.4.1", "v26.4.1", "https://helm.ngc.nvidia.com/nvidia", ""},
                               "https://example/release.yaml", std::string(64, 'b'), {"nfd"}, "", false, "", "", ""};
  Store store = Store::open(f.store_dir, StoreAccess::Exclusive).value_or_throw();
  CreateOptions o;
  o.output = f.dir / "n.bundle";
  auto progress = make_progress(ProgressStyle::None);
  auto refused = create_bundle(store, f.lock, f.key, o, *progress);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("chart network-operator 26.4.1 is not in the store") == 0);

  store.put_chart("network-operator", "26.4.1", "network chart bytes", "test").value_or_throw();
  create_bundle(store, f.lock, f.key, o, *progress).value_or_throw();
  auto r = f.verify({f.dir / "n.bundle"});
  INFO(problems(r));
  CHECK(r.problems.empty());
  std::map<std::string, std::string> charts;
  for (const auto& e : read_tar(f.dir / "n.bundle"))
    if (e.path.rfind("charts/", 0) == 0) charts[e.path] = e.data;
  CHECK(charts.size() == 2);
  CHECK(charts["charts/network-operator-26.4.1.tgz"] == "network chart bytes");
}

TEST_CASE("an index carried for some platforms travels filtered, with its upstream index as evidence", "[bundle]") {
  Fixture f;
  fs::path out = f.dir / "b.bundle";
  f.create(out);
  auto r = f.verify({out});
  INFO(problems(r));
  REQUIRE(r.problems.empty());
  const LockImage& li = f.lock.images[0];
  REQUIRE_FALSE(li.site_digest.empty());
  const BundleImage* img = nullptr;
  for (const auto& i : r.manifest.images)
    if (i.ref == li.source) img = &i;
  REQUIRE(img);
  CHECK(img->digest == li.site_digest);
  CHECK(img->upstream_digest == li.digest);
  CHECK(img->platforms == std::vector<std::string>{"linux/amd64"});
  // Both indexes travel; the bundle's own OCI layout names the filtered one.
  const auto entries = read_tar(out);
  auto entry = [&](const std::string& path) -> const TarEntry* {
    for (const auto& e : entries)
      if (e.path == path) return &e;
    return nullptr;
  };
  REQUIRE(entry("oci/blobs/sha256/" + digest_hex(li.digest)));
  const TarEntry* filtered = entry("oci/blobs/sha256/" + digest_hex(li.site_digest));
  REQUIRE(filtered);
  CHECK(sha256_digest(filtered->data) == li.site_digest);
  auto parsed = oci::parse_manifest(filtered->data, oci::k_oci_index).value_or_throw();
  REQUIRE(parsed.manifests.size() == 1);
  CHECK(parsed.manifests[0].platform.architecture == "amd64");
  CHECK(entry("oci/index.json")->data.find(li.site_digest) != std::string::npos);
  CHECK(entry("oci/index.json")->data.find(li.digest) == std::string::npos);

  SECTION("a lock whose siteDigest its platforms do not give is refused at create") {
    f.lock.images[0].site_digest = sha256_digest("another index");
    Store store = Store::open(f.store_dir, StoreAccess::Shared).value_or_throw();
    CreateOptions o;
    o.output = f.dir / "bad.bundle";
    auto progress = make_progress(ProgressStyle::None);
    auto bad = create_bundle(store, f.lock, f.key, o, *progress);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("not the lock's siteDigest") != std::string::npos);
  }
}
