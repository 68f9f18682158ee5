#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "common/files.hpp"
#include "mirror/catalog_db.hpp"
#include "mirror/store.hpp"
#include "tests/unit/test_store_util.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::signing;
using storetest::Scratch;

namespace {

std::size_t count_files(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

// A stored OCI image: config + one layer + manifest, with an index.json entry.
StoredImage put_image(Store& s, const std::string& ref, const std::string& layer_text) {
  auto layer = storetest::blob(layer_text);
  auto cfg = storetest::blob("{\"architecture\":\"amd64\",\"os\":\"linux\"}");
  nlohmann::json m = {{"schemaVersion", 2},
                      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                      {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", cfg.digest}, {"size", cfg.bytes.size()}}},
                      {"layers", {{{"mediaType", "application/vnd.oci.image.layer.v1.tar+gzip"}, {"digest", layer.digest}, {"size", layer.bytes.size()}}}}};
  auto mb = storetest::blob(m.dump());
  REQUIRE(s.put_blob(layer.digest, layer.bytes));
  REQUIRE(s.put_blob(cfg.digest, cfg.bytes));
  REQUIRE(s.put_blob(mb.digest, mb.bytes));
  StoredImage img{ref, "application/vnd.oci.image.manifest.v1+json", mb.digest, mb.bytes.size(), {}};
  REQUIRE(s.add_images({img}));
  return img;
}

fs::path s_partial(const fs::path& store, const std::string& digest) {
  return store / "blobs" / "sha256" / (digest.substr(7) + ".partial");
}

}  // namespace

TEST_CASE("store creates an OCI layout and publishes blobs atomically", "[store]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  CHECK(fs::exists(t / "store" / "oci-layout"));
  auto idx = nlohmann::json::parse(read_file(t / "store" / "index.json").value_or_throw());
  CHECK(idx["schemaVersion"] == 2);
  CHECK(idx["manifests"].empty());

  auto b = storetest::blob("hello layer");
  REQUIRE(s.put_blob(b.digest, b.bytes));
  CHECK(s.has_blob(b.digest, b.bytes.size()));
  CHECK(read_file(s.blob_path(b.digest)).value_or_throw() == "hello layer");

  SECTION("a blob whose bytes do not hash to its digest is never published") {
    auto other = storetest::blob("something else");
    auto w = s.open_blob(other.digest, 11).value_or_throw();
    REQUIRE(w->write("hello world"));
    auto r = w->publish();
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("hashes to") != std::string::npos);
    w.reset();
    CHECK_FALSE(s.has_blob(other.digest));
    CHECK(count_files(t / "store" / "blobs" / "sha256") == 1);  // no temp left behind
  }
  SECTION("a short blob is refused") {
    auto w = s.open_blob(b.digest, b.bytes.size() + 5).value_or_throw();
    REQUIRE(w->write(b.bytes));
    CHECK_FALSE(w->publish());
  }
  SECTION("truncate restarts the hash") {
    auto c = storetest::blob("third");
    auto w = s.open_blob(c.digest, 5).value_or_throw();
    REQUIRE(w->write("junk!"));
    REQUIRE(w->truncate());
    REQUIRE(w->write("third"));
    REQUIRE(w->publish());
    CHECK_FALSE(s.has_blob(c.digest));  // named only once it is on disk
    REQUIRE(s.sync_blobs());
    CHECK(s.has_blob(c.digest, 5));
  }
  SECTION("published blobs wait, complete, for one sync; a store opened before it resumes them") {
    auto c = storetest::blob(std::string(3 * BlobWriter::k_write_piece + 17, 'x'));  // several buffer flushes
    {
      auto w = s.open_blob(c.digest, c.bytes.size()).value_or_throw();
      for (std::size_t at = 0; at < c.bytes.size(); at += 16384) REQUIRE(w->write(c.bytes.substr(at, 16384)));
      REQUIRE(w->publish());
    }
    auto partial = s_partial(t / "store", c.digest);
    CHECK(fs::file_size(partial) == c.bytes.size());
    CHECK_FALSE(s.has_blob(c.digest));
    REQUIRE(s.sync_blobs());
    CHECK_FALSE(fs::exists(partial));
    CHECK(read_file(s.blob_path(c.digest)).value_or_throw() == c.bytes);
  }
  SECTION("a blob published with BlobSync::Now has its name at once; sync_blobs() still syncs the folder") {
    auto c = storetest::blob(std::string(2 * BlobWriter::k_write_piece + 5, 'z'));
    auto w = s.open_blob(c.digest, c.bytes.size()).value_or_throw();
    REQUIRE(w->write(c.bytes));
    REQUIRE(w->publish(BlobSync::Now));
    CHECK_FALSE(fs::exists(s_partial(t / "store", c.digest)));
    CHECK(read_file(s.blob_path(c.digest)).value_or_throw() == c.bytes);
    auto bad = storetest::blob("not this");
    auto w2 = s.open_blob(bad.digest, 8).value_or_throw();
    REQUIRE(w2->write("not that"));
    CHECK_FALSE(w2->publish(BlobSync::Now));  // checked before it is named
    w2.reset();
    CHECK_FALSE(s.has_blob(bad.digest));
    REQUIRE(s.sync_blobs());
    CHECK(s.has_blob(c.digest, c.bytes.size()));
  }
  SECTION("chunks of any size, smaller and larger than a piece, land in order") {
    std::string bytes;
    for (std::size_t i = 0; i < 5 * BlobWriter::k_write_piece + 999; ++i) bytes.push_back(static_cast<char>('a' + i % 23));
    auto c = storetest::blob(bytes);
    auto w = s.open_blob(c.digest, c.bytes.size()).value_or_throw();
    const std::size_t piece = BlobWriter::k_write_piece;
    std::size_t at = 0;
    for (std::size_t n : {std::size_t{1}, piece + 7, 2 * piece, piece - 8, std::size_t{3}, piece}) {
      REQUIRE(w->write(c.bytes.substr(at, n)));
      at += n;
    }
    REQUIRE(w->write(c.bytes.substr(at)));
    REQUIRE(w->publish());
    REQUIRE(s.sync_blobs());
    CHECK(read_file(s.blob_path(c.digest)).value_or_throw() == c.bytes);
  }
  SECTION("a writer dropped mid-blob leaves every byte it was given for the resume") {
    auto c = storetest::blob(std::string(BlobWriter::k_write_piece + 100, 'y'));
    {
      auto w = s.open_blob(c.digest, c.bytes.size()).value_or_throw();
      REQUIRE(w->write(c.bytes.substr(0, 5000)));
    }
    CHECK(fs::file_size(s_partial(t / "store", c.digest)) == 5000);
  }
}

TEST_CASE("index.json keeps one entry per ref with the ref name annotation", "[store]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  put_image(s, "registry.example/a/b:1", "layer-1");
  auto second = put_image(s, "registry.example/a/c:2", "layer-2");
  auto replaced = put_image(s, "registry.example/a/b:1", "layer-1b");
  auto all = s.images().value_or_throw();
  REQUIRE(all.size() == 2);
  CHECK(all[0].ref == "registry.example/a/b:1");
  CHECK(all[0].digest == replaced.digest);
  CHECK(all[1].digest == second.digest);
  auto idx = nlohmann::json::parse(read_file(t / "store" / "index.json").value_or_throw());
  CHECK(idx["manifests"][1]["annotations"]["org.opencontainers.image.ref.name"] == "registry.example/a/c:2");

  SECTION("an entry whose manifest is absent is refused") {
    StoredImage ghost{"x/y:z", "application/vnd.oci.image.manifest.v1+json", storetest::blob("nope").digest, 4, {}};
    CHECK_FALSE(s.add_images({ghost}));
    CHECK(s.images().value_or_throw().size() == 2);
  }
}

TEST_CASE("fsck finds a flipped byte and a missing layer", "[store]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  put_image(s, "registry.example/a/b:1", "layer-one-content");
  auto clean = s.fsck().value_or_throw();
  CHECK(clean.problems.empty());
  CHECK(clean.blobs == 3);
  CHECK(clean.images == 1);

  auto layer = storetest::blob("layer-one-content");
  SECTION("flipped byte") {
    {
      std::fstream f(s.blob_path(layer.digest), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(3);
      f.put('X');
    }
    auto rep = s.fsck().value_or_throw();
    REQUIRE(rep.problems.size() == 1);
    CHECK(rep.problems[0].find(layer.digest.substr(7)) != std::string::npos);
    CHECK(rep.problems[0].find("corrupt") != std::string::npos);
  }
  SECTION("missing layer") {
    fs::remove(s.blob_path(layer.digest));
    auto rep = s.fsck().value_or_throw();
    REQUIRE(rep.problems.size() == 1);
    CHECK(rep.problems[0].find("registry.example/a/b:1") != std::string::npos);
    CHECK(rep.problems[0].find("missing") != std::string::npos);
  }
}

TEST_CASE("gc drops unreferenced blobs and temp files, keeps the rest", "[store]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  put_image(s, "registry.example/a/b:1", "kept-layer");
  auto orphan = storetest::blob("orphan blob, 25 bytes....");
  REQUIRE(s.put_blob(orphan.digest, orphan.bytes));
  { std::ofstream(t / "store" / "blobs" / "sha256" / "abc.tmp.Q1w2E3") << "partial"; }
  auto rep = s.gc().value_or_throw();
  CHECK(rep.blobs_removed == 1);
  CHECK(rep.temps_removed == 1);
  CHECK(rep.bytes_freed == orphan.bytes.size() + 7);
  CHECK_FALSE(s.has_blob(orphan.digest));
  CHECK(s.has_blob(storetest::blob("kept-layer").digest));
  CHECK(s.fsck().value_or_throw().problems.empty());
  CHECK(s.gc().value_or_throw().blobs_removed == 0);
}

TEST_CASE("gc removes a killed build's scratch and an earlier package cache in packages/, keeps the key", "[store]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  CHECK(s.packages_dir() == t / "store" / "packages");
  CHECK(s.keys_dir() == t / "store" / "keys");
  fs::create_directories(s.packages_dir() / ".site-repo.4242" / "repo" / "pool");
  { std::ofstream(s.packages_dir() / ".site-repo.4242" / "repo" / "pool" / "a.deb") << "0123456789"; }
  // An earlier version kept package files here; the cache is the blobs now.
  { std::ofstream(s.packages_dir() / "linux-headers_1_amd64.deb") << "old"; }
  fs::create_directories(s.keys_dir());
  { std::ofstream(s.keys_dir() / "package-repo.asc") << "key"; }
  // A link named like scratch is not followed, and not removed as one.
  fs::create_directories(t / "elsewhere");
  { std::ofstream(t / "elsewhere" / "x") << "x"; }
  fs::create_directory_symlink(t / "elsewhere", s.packages_dir() / ".link");
  auto rep = s.gc().value_or_throw();
  CHECK(rep.temps_removed == 2);
  CHECK(rep.bytes_freed == 13);
  CHECK_FALSE(fs::exists(s.packages_dir() / ".site-repo.4242"));
  CHECK_FALSE(fs::exists(s.packages_dir() / "linux-headers_1_amd64.deb"));
  CHECK(fs::exists(s.packages_dir() / ".link"));
  CHECK(fs::exists(s.keys_dir() / "package-repo.asc"));
  CHECK(fs::exists(t / "elsewhere" / "x"));
}

TEST_CASE("a second writer on the same store fails with a clear message", "[store]") {
  Scratch t;
  auto first = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto second = Store::open(t / "store", StoreAccess::Exclusive, 0);
  REQUIRE_FALSE(second);
  CHECK(second.error().message.find("in use by another gpubundle process") != std::string::npos);
  CHECK_FALSE(Store::open(t / "store", StoreAccess::Shared, 0));
  CHECK(Store::open(t / "store", StoreAccess::Read));  // ls needs no lock
  CHECK_FALSE(Store::open(t / "nothing", StoreAccess::Read));
}

TEST_CASE("a partial download is resumed by the next writer and checked whole", "[store][hostile]") {
  Scratch t;
  auto b = storetest::blob("0123456789abcdefghij");
  {
    auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
    auto w = s.open_blob(b.digest, b.bytes.size()).value_or_throw();
    REQUIRE(w->write(b.bytes.substr(0, 8)));
    // The process dies here: the writer goes without publishing.
  }
  auto partial = s_partial(t / "store", b.digest);
  REQUIRE(fs::exists(partial));
  CHECK(fs::file_size(partial) == 8);
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  CHECK(fs::exists(partial));  // kept by the sweep: it can be resumed
  CHECK(s.fsck().value_or_throw().problems.empty());
  auto w = s.open_blob(b.digest, b.bytes.size()).value_or_throw();
  Sha256 client;
  CHECK(w->resume(client).value_or_throw() == 8);
  CHECK(w->size() == 8);
  REQUIRE(w->write(b.bytes.substr(8)));
  client.update(b.bytes.substr(8));
  CHECK("sha256:" + client.hex() == b.digest);
  REQUIRE(w->publish());
  REQUIRE(s.sync_blobs());
  CHECK(read_file(s.blob_path(b.digest)).value_or_throw() == b.bytes);
  CHECK_FALSE(fs::exists(partial));

  SECTION("a resumed prefix with wrong bytes fails the digest and is dropped") {
    auto c = storetest::blob("the real content, 26 bytes");
    {
      auto w2 = s.open_blob(c.digest, c.bytes.size()).value_or_throw();
      REQUIRE(w2->write("XXX"));
    }
    auto w2 = s.open_blob(c.digest, c.bytes.size()).value_or_throw();
    Sha256 h;
    REQUIRE(w2->resume(h).value_or_throw() == 3);
    REQUIRE(w2->write(c.bytes.substr(3)));
    CHECK_FALSE(w2->publish());
    w2.reset();
    CHECK_FALSE(s.has_blob(c.digest));
    CHECK_FALSE(fs::exists(s_partial(t / "store", c.digest)));
  }
}

TEST_CASE("an exclusive open sweeps temp files of killed runs and finished partials", "[store][hostile]") {
  Scratch t;
  auto b = storetest::blob("complete blob");
  {
    auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
    REQUIRE(s.put_blob(b.digest, b.bytes));
  }
  auto blobs = t / "store" / "blobs" / "sha256";
  { std::ofstream(blobs / "abc.tmp.Q1w2E3") << "left by kill -9"; }
  { std::ofstream(t / "store" / "index.json.tmp.Zz9Yy8") << "{}"; }
  { std::ofstream(s_partial(t / "store", b.digest)) << "complete"; }  // its blob is already in place
  auto other = storetest::blob("not yet fetched");
  { std::ofstream(s_partial(t / "store", other.digest)) << "not"; }
  {
    auto ro = Store::open(t / "store", StoreAccess::Shared).value_or_throw();
    CHECK(ro.swept().temps_removed == 0);  // only a writer sweeps
    CHECK(fs::exists(blobs / "abc.tmp.Q1w2E3"));
  }
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  CHECK(s.swept().temps_removed == 3);
  CHECK(s.swept().bytes_freed == 15 + 2 + 8);
  CHECK_FALSE(fs::exists(blobs / "abc.tmp.Q1w2E3"));
  CHECK_FALSE(fs::exists(t / "store" / "index.json.tmp.Zz9Yy8"));
  CHECK(fs::exists(s_partial(t / "store", other.digest)));  // resumable
  CHECK(s.has_blob(b.digest, b.bytes.size()));
  CHECK(s.gc().value_or_throw().temps_removed == 1);  // gc drops the partial too
}

TEST_CASE("fsck says how to repair a corrupt blob; --repair removes it; put_blob replaces a bad copy", "[store][hostile]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  put_image(s, "registry.example/a/b:1", "layer-one-content");
  auto layer = storetest::blob("layer-one-content");
  auto flip = [&](const std::string& digest) {
    std::fstream f(s.blob_path(digest), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1);
    f.put('#');
  };
  flip(layer.digest);
  auto rep = s.fsck().value_or_throw();
  REQUIRE(rep.problems.size() == 1);
  CHECK(rep.problems[0].find("store fsck --repair") != std::string::npos);
  auto fixed = s.fsck(true).value_or_throw();
  REQUIRE(fixed.repaired.size() == 1);
  CHECK(fixed.repaired[0] == "blobs/sha256/" + layer.digest.substr(7));
  REQUIRE(fixed.problems.size() == 1);  // now missing, until mirror fetches it
  CHECK(fixed.problems[0].find("missing") != std::string::npos);
  CHECK_FALSE(s.has_blob(layer.digest));

  // A manifest is written again by every mirror: a bad copy is replaced.
  auto m = storetest::blob("{\"schemaVersion\":2}");
  REQUIRE(s.put_blob(m.digest, m.bytes));
  flip(m.digest);
  REQUIRE(s.put_blob(m.digest, m.bytes));
  CHECK(read_file(s.blob_path(m.digest)).value_or_throw() == m.bytes);

  CHECK_FALSE(s.has_blob("sha512:../../../etc/hostname"));
  CHECK_FALSE(s.read_blob("sha256:../../../etc/hostname"));
}

namespace {

// An OCI image manifest naming `config` and `layers`, parsed as publish() takes it.
oci::Manifest image_manifest(const storetest::Blob& config, const std::vector<storetest::Blob>& layers) {
  nlohmann::json m = {{"schemaVersion", 2},
                      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                      {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", config.digest}, {"size", config.bytes.size()}}},
                      {"layers", nlohmann::json::array()}};
  for (const auto& l : layers)
    m["layers"].push_back({{"mediaType", "application/vnd.oci.image.layer.v1.tar+gzip"}, {"digest", l.digest}, {"size", l.bytes.size()}});
  return oci::parse_manifest(m.dump(), oci::k_oci_manifest).value_or_throw();
}

oci::Manifest index_of(const std::vector<std::pair<const oci::Manifest*, std::string>>& children) {
  nlohmann::json idx = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"}, {"manifests", nlohmann::json::array()}};
  for (const auto& [m, arch] : children)
    idx["manifests"].push_back({{"mediaType", m->media_type}, {"digest", m->digest}, {"size", m->bytes.size()},
                                {"platform", {{"os", "linux"}, {"architecture", arch}}}});
  return oci::parse_manifest(idx.dump(), oci::k_oci_index).value_or_throw();
}

std::size_t catalog_rows(Store& s) { return s.catalog().value_or_throw()->images().value_or_throw().size(); }

}  // namespace

TEST_CASE("publish writes nothing until every blob a manifest names is in the store", "[store][publish]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto cfg = storetest::blob(R"({"architecture":"amd64","os":"linux"})");
  auto layer = storetest::blob("layer bytes");
  REQUIRE(s.put_blob(cfg.digest, cfg.bytes));
  Publication p{"localhost/acme/built:1", image_manifest(cfg, {layer}), {}, {"linux/amd64"}, k_built_here};

  auto refused = s.publish({p});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message == "localhost/acme/built:1: blob " + layer.digest + " (11 bytes) is not in the store; nothing was published");
  CHECK(s.images().value_or_throw().empty());
  CHECK_FALSE(s.has_blob(p.top.digest));  // not even the manifest blob
  CHECK(catalog_rows(s) == 0);

  SECTION("a layer of the wrong size counts as missing") {
    REQUIRE(s.put_blob(layer.digest, layer.bytes));
    p.top = image_manifest(cfg, {{"5 b.", layer.digest}});  // names the layer with another size
    CHECK_FALSE(s.publish({p}));
    CHECK(s.images().value_or_throw().empty());
  }
  SECTION("one bad artifact holds back the whole batch") {
    auto ok = storetest::blob("another layer");
    REQUIRE(s.put_blob(ok.digest, ok.bytes));
    Publication good{"localhost/acme/good:1", image_manifest(cfg, {ok}), {}, {"linux/amd64"}, k_built_here};
    CHECK_FALSE(s.publish({good, p}));
    CHECK(s.images().value_or_throw().empty());
  }
  SECTION("with the layer there: manifest, index.json entry, catalog rows") {
    REQUIRE(s.put_blob(layer.digest, layer.bytes));
    REQUIRE(s.publish({p}));
    auto stored = s.find_image(p.ref);
    REQUIRE(stored);
    CHECK(stored->digest == p.top.digest);
    CHECK(stored->platforms == std::vector<std::string>{"linux/amd64"});
    CHECK(s.fsck().value_or_throw().problems.empty());
    auto rows = s.catalog().value_or_throw()->images().value_or_throw();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].size == p.top.bytes.size() + cfg.bytes.size() + layer.bytes.size());
    CHECK(rows[0].source == k_built_here);
    CHECK(p.bytes() == rows[0].size);
  }
}

TEST_CASE("publish of an index checks each kept child and only children the index lists", "[store][publish]") {
  Scratch t;
  auto s = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto cfg_a = storetest::blob(R"({"architecture":"amd64","os":"linux"})");
  auto cfg_b = storetest::blob(R"({"architecture":"arm64","os":"linux"})");
  auto la = storetest::blob("amd64 layer"), lb = storetest::blob("arm64 layer");
  for (const auto* b : {&cfg_a, &cfg_b, &la}) REQUIRE(s.put_blob(b->digest, b->bytes));
  auto amd = image_manifest(cfg_a, {la}), arm = image_manifest(cfg_b, {lb});
  auto idx = index_of({{&amd, "amd64"}, {&arm, "arm64"}});

  // Only amd64 kept: arm64's missing layer does not matter.
  Publication p{"example.com/multi:1", idx, {amd}, {"linux/amd64"}, "example.com/multi"};
  SECTION("kept children complete: published") {
    REQUIRE(s.publish({p}));
    CHECK(s.find_image(p.ref));
    CHECK(s.has_blob(amd.digest));
    CHECK(s.fsck().value_or_throw().problems.empty());
  }
  SECTION("a kept child whose layer is missing: refused") {
    p.children.push_back(arm);
    p.platforms.push_back("linux/arm64");
    auto r = s.publish({p});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find(lb.digest) != std::string::npos);
    CHECK_FALSE(s.find_image(p.ref));
    CHECK_FALSE(s.has_blob(amd.digest));
  }
  SECTION("a child the index does not list: refused") {
    auto stray = image_manifest(cfg_a, {});
    p.children.push_back(stray);
    auto r = s.publish({p});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("is not listed by its index") != std::string::npos);
    CHECK_FALSE(s.find_image(p.ref));
  }
}

TEST_CASE("the catalog's schema is made once, kept on reopening, and a newer one is refused", "[store][catalog]") {
  Scratch s;
  const auto file = s / "catalog.db";
  {
    auto cat = CatalogDb::open(file);
    REQUIRE(cat.ok());
    REQUIRE(cat->record({{"reg.example/a:1", "sha256:" + std::string(64, 'a'), "application/vnd.oci.image.index.v1+json", 10,
                          "reg.example/a", "linux/amd64", "2026-12-07T00:00:00Z"}},
                        {{"sha256:" + std::string(64, 'a'), 10}})
                .ok());
  }
  sqlite3* raw = nullptr;
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> closer(nullptr, sqlite3_close);
  REQUIRE(sqlite3_open(file.c_str(), &raw) == SQLITE_OK);
  closer.reset(raw);
  auto version = [&] {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    int v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
  };
  CHECK(version() == 1);
  {
    auto again = CatalogDb::open(file);
    REQUIRE(again.ok());
    auto rows = again->images();
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 1);
    CHECK(rows->front().ref == "reg.example/a:1");
  }
  REQUIRE(sqlite3_exec(raw, "PRAGMA user_version=2", nullptr, nullptr, nullptr) == SQLITE_OK);
  auto newer = CatalogDb::open(file);
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.error().kind == ErrorKind::Input);
  CHECK(newer.error().message == file.string() + ": catalog schema version 2; this gpubundle reads version 1");
}
