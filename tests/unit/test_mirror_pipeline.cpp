#include <catch2/catch.hpp>

#include "common/files.hpp"
#include "mirror/mirror.hpp"
#include "tests/unit/test_store_util.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;
using storetest::blob;
using storetest::FakeSource;
using storetest::Scratch;

namespace {

struct World {
  FakeSource src;
  Lock lock;
  storetest::Blob base = blob(std::string(5000, 'b'));  // shared by every image
  storetest::Blob amd = blob(std::string(3000, 'a')), arm = blob(std::string(3000, 'r'));
  storetest::Blob index, single;

  World() {
    auto amd_m = src.add_image("reg.test/nvidia/driver", "", {base, amd}, "amd64", true);
    auto arm_m = src.add_image("reg.test/nvidia/driver", "", {base, arm}, "arm64", true);
    index = src.add_index("reg.test/nvidia/driver", "550", {{"amd64", amd_m}, {"arm64", arm_m}}, true);
    single = src.add_image("reg.test/nvidia/toolkit", "v1", {base, blob("toolkit layer")}, "amd64", false);
    lock.platforms = {"linux/amd64"};
    lock.images.push_back({{"driver"}, "reg.test/nvidia/driver:550", {"linux/amd64"}, "", "", {}});
    lock.images.push_back({{"toolkit"}, "reg.test/nvidia/toolkit:v1", {"linux/amd64"}, "", "", {}});
  }
};

class Quiet final : public Progress {
public:
  std::vector<std::string> items;
  void begin(std::string_view, std::uint64_t) override {}
  void advance(std::uint64_t) override {}
  void item(std::string_view name, std::string_view state) override { items.push_back(std::string(name) + " " + std::string(state)); }
  void end(std::string_view) override {}
};

}  // namespace

TEST_CASE("mirror copies a sparse index and shares blobs", "[mirror]") {
  Scratch t;
  World w;
  Quiet progress;
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto s = mirror_images(w.lock, store, w.src, progress, {}).value_or_throw();

  // Nothing was stored: one GET per top manifest, no HEAD before it.
  CHECK(w.src.heads == 0);
  // The shared base layer came once; the arm64 layer never.
  CHECK(w.src.fetched.count(w.base.digest) == 1);
  CHECK(w.src.fetched.count(w.arm.digest) == 0);
  CHECK(store.has_blob(w.amd.digest));
  CHECK_FALSE(store.has_blob(w.arm.digest));
  // Index bytes verbatim, media type unchanged, digest into the lock.
  CHECK(read_file(store.blob_path(w.index.digest)).value_or_throw() == w.index.bytes);
  auto e = store.find_image("reg.test/nvidia/driver:550");
  REQUIRE(e);
  CHECK(e->media_type == "application/vnd.docker.distribution.manifest.list.v2+json");
  CHECK(e->platforms == std::vector<std::string>{"linux/amd64"});
  CHECK(w.lock.images[0].digest == w.index.digest);
  CHECK(w.lock.images[1].digest == w.single.digest);
  CHECK(s.bytes_downloaded > 8000);
  CHECK(store.fsck().value_or_throw().problems.empty());
  auto rows = (*store.catalog().value_or_throw()).images().value_or_throw();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].platforms == "linux/amd64");

  SECTION("a re-run only checks manifests and downloads nothing") {
    int gets = w.src.gets;
    int fetches = w.src.blob_fetches;
    Quiet p2;
    auto again = mirror_images(w.lock, store, w.src, p2, {}).value_or_throw();
    CHECK(again.bytes_downloaded == 0);
    CHECK(again.blobs_fetched == 0);
    CHECK(w.src.gets == gets);  // HEAD only
    CHECK(w.src.blob_fetches == fetches);
    CHECK(again.images[0].up_to_date);
    CHECK(p2.items.size() == 2);
  }
  SECTION("adding a platform fetches only the new blobs") {
    w.lock.images[0].platforms = {"linux/amd64", "linux/arm64"};
    auto more = mirror_images(w.lock, store, w.src, progress, {}).value_or_throw();
    CHECK(more.blobs_fetched == 2);  // arm64 config + arm64 layer
    CHECK(store.has_blob(w.arm.digest));
    CHECK(store.fsck().value_or_throw().problems.empty());
  }
  SECTION("--locked refuses a moved tag, naming both digests") {
    auto moved = w.src.add_image("reg.test/nvidia/toolkit", "v1", {blob("new layer")}, "amd64", false);
    MirrorOptions o;
    o.locked = true;
    auto r = mirror_images(w.lock, store, w.src, progress, o);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("reg.test/nvidia/toolkit:v1") != std::string::npos);
    CHECK(r.error().message.find(moved.digest) != std::string::npos);
    CHECK(r.error().message.find(w.single.digest) != std::string::npos);
    CHECK_FALSE(store.has_blob(blob("new layer").digest));
  }
}

TEST_CASE("mirror names every missing image and platform before fetching", "[mirror]") {
  Scratch t;
  World w;
  Quiet progress;
  w.lock.images[0].platforms = {"linux/amd64", "linux/ppc64le"};
  w.lock.images.push_back({{"x"}, "reg.test/nvidia/absent:1", {"linux/amd64"}, "", "", {}});
  w.lock.images.push_back({{"y"}, "reg.test/nvidia/toolkit:nope", {"linux/amd64"}, "", "", {}});
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto r = mirror_images(w.lock, store, w.src, progress, {});
  REQUIRE_FALSE(r);
  const auto& m = r.error().message;
  CHECK(m.find("3 problems") != std::string::npos);
  CHECK(m.find("reg.test/nvidia/absent:1: not found") != std::string::npos);
  CHECK(m.find("reg.test/nvidia/toolkit:nope: not found") != std::string::npos);
  CHECK(m.find("no linux/ppc64le in its index (has linux/amd64, linux/arm64)") != std::string::npos);
  CHECK(w.src.blob_fetches == 0);
  CHECK(store.images().value_or_throw().empty());
}

TEST_CASE("mirror never stores a corrupted blob", "[mirror]") {
  Scratch t;
  World w;
  Quiet progress;
  w.src.corrupt.insert(w.amd.digest);
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto r = mirror_images(w.lock, store, w.src, progress, {});
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find(w.amd.digest) != std::string::npos);
  CHECK_FALSE(store.has_blob(w.amd.digest));
  CHECK(store.images().value_or_throw().empty());  // nothing published
  CHECK(store.fsck().value_or_throw().problems.empty());

  // The next run, with a healthy source, completes from where it stopped.
  w.src.corrupt.clear();
  int before = w.src.blob_fetches;
  auto ok = mirror_images(w.lock, store, w.src, progress, {}).value_or_throw();
  CHECK(w.src.blob_fetches - before == 1);
  CHECK(store.fsck().value_or_throw().problems.empty());
}

TEST_CASE("a malformed lock reference is bad input, named once", "[mirror][hostile]") {
  Scratch t;
  World w;
  Quiet progress;
  w.lock.images.push_back({{"x"}, "reg.test/Bad Name:1", {"linux/amd64"}, "", "", {}});
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto r = mirror_images(w.lock, store, w.src, progress, {});
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ErrorKind::Input);
  const auto& m = r.error().message;
  auto first = m.find("reg.test/Bad Name:1");
  REQUIRE(first != std::string::npos);
  CHECK(m.find("reg.test/Bad Name:1", first + 1) == std::string::npos);
  CHECK(w.src.heads == 0);
}

TEST_CASE("a hostile child digest in an index reaches neither a URL nor a path", "[mirror][hostile]") {
  Scratch t;
  World w;
  Quiet progress;
  storetest::Blob evil = blob("{}");
  evil.digest = "sha512:../../../../etc/hostname";
  w.src.add_index("reg.test/nvidia/evil", "1", {{"amd64", evil}}, false);
  w.lock.images.push_back({{"evil"}, "reg.test/nvidia/evil:1", {"linux/amd64"}, "", "", {}});
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  int gets_before = w.src.gets;
  auto r = mirror_images(w.lock, store, w.src, progress, {});
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("unsupported child digest 'sha512:../../../../etc/hostname'") != std::string::npos);
  // Three tops and the driver's amd64 child; never a GET by the hostile digest.
  CHECK(w.src.gets - gets_before == 4);
  CHECK(r.error().message.find("MANIFEST_UNKNOWN") == std::string::npos);
  CHECK(w.src.blob_fetches == 0);
}

TEST_CASE("an index carried for some platforms gets its filtered index in the lock", "[mirror]") {
  Scratch t;
  World w;
  Quiet progress;
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto upstream = oci::parse_manifest(w.index.bytes, "application/vnd.docker.distribution.manifest.list.v2+json").value_or_throw();
  SECTION("amd64 of amd64 + arm64: the site gets the filtered index; a single image keeps its digest") {
    mirror_images(w.lock, store, w.src, progress, {}).value_or_throw();
    auto site = oci::site_index(upstream, {"linux/amd64"}).value_or_throw();
    REQUIRE(site);
    CHECK(w.lock.images[0].digest == w.index.digest);  // upstream, as --locked checks
    CHECK(w.lock.images[0].site_digest == site->digest);
    CHECK(w.lock.images[0].at_site() == site->digest);
    CHECK(w.lock.images[1].site_digest.empty());
    CHECK(w.lock.images[1].at_site() == w.single.digest);
    // It reads back from the lock text.
    auto again = parse_lock(lock_to_json(w.lock), "t.lock.json").value_or_throw();
    CHECK(again.images[0].site_digest == site->digest);
  }
  SECTION("every platform listed: no filtered index") {
    w.lock.images[0].platforms = {"linux/amd64", "linux/arm64"};
    mirror_images(w.lock, store, w.src, progress, {}).value_or_throw();
    CHECK(w.lock.images[0].site_digest.empty());
  }
  SECTION("--platforms all: every child, upstream digests, platforms [all] in the lock") {
    MirrorOptions o;
    o.all_platforms = true;
    mirror_images(w.lock, store, w.src, progress, o).value_or_throw();
    CHECK(w.lock.images[0].site_digest.empty());
    CHECK(w.lock.images[0].platforms == std::vector<std::string>{"all"});
    CHECK(store.has_blob(w.arm.digest));
  }
}

TEST_CASE("a lock's siteDigest is checked where the lock is read", "[mirror][hostile]") {
  World w;
  w.lock.generator = "t";
  w.lock.images[0].digest = w.index.digest;
  auto text = [&](const std::string& site) {
    w.lock.images[0].site_digest = site;
    return lock_to_json(w.lock);
  };
  CHECK(parse_lock(text(sha256_digest("x")), "l.json"));
  auto bad = parse_lock(text("sha256:zz"), "l.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("images[0].siteDigest") != std::string::npos);
  auto same = parse_lock(text(w.index.digest), "l.json");
  REQUIRE_FALSE(same);
  CHECK(same.error().message.find("siteDigest") != std::string::npos);
}
