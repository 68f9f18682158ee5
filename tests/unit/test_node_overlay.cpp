// The node overlay artifact (node-images/overlay_artifact.hpp) against a real
// store on disk: round trip, determinism, and what export refuses.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "mirror/store.hpp"
#include "node-images/layer.hpp"
#include "node-images/overlay_artifact.hpp"
#include "signing/digest.hpp"
#include "tests/unit/fixtures.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::node_images;
using namespace gb::signing;
using namespace gbtest;
using json = nlohmann::json;

namespace {

// A bake output folder as node-image bake writes it (small contents).
fs::path fake_bake(const fs::path& dir, const std::string& version = "580.95.05") {
  fs::create_directories(dir / "packages");
  LayerBuilder layer;
  layer.add_data("usr/bin/nvidia-smi", "#!/bin/sh\necho NVIDIA-SMI\n", 0755);
  layer.add_data("etc/modules-load.d/nvidia.conf", "nvidia\n");
  auto tar = layer.write_tar(dir / "overlay.tar");
  REQUIRE(tar);
  json m = {{"schemaVersion", 1},
            {"driver", {{"version", version}, {"branch", version.substr(0, 3)}, {"moduleType", "open"}}},
            {"kernels", {"6.1.0-57-amd64"}},
            {"signer", nullptr},
            {"installer", {{"source", "NVIDIA.run"}, {"sha256", std::string(64, 'a')}}},
            {"overlay", {{"file", "overlay.tar"}, {"sha256", tar->sha256}, {"size", tar->size}}},
            {"packages", {"nvidia-container-toolkit-base_1.17.8-1_amd64.deb"}}};
  spit(dir / "manifest.json", m.dump(2));
  spit(dir / "install.sh", "#!/bin/sh\necho install\n");
  spit(dir / "values.yaml", "driver:\n  enabled: false\n");
  spit(dir / "packages" / "nvidia-container-toolkit-base_1.17.8-1_amd64.deb", "not really a deb");
  return dir;
}

const std::string k_ref = "localhost/gpubundle/node-overlay:580.95.05-ubuntu22.04";

}  // namespace

TEST_CASE("a stored overlay exports back as the same files", "[node-overlay]") {
  TempDir t;
  auto baked = fake_bake(t / "baked");
  auto store = Store::open(t / "store", StoreAccess::Exclusive);
  REQUIRE(store);
  auto stored = store_overlay(*store, baked, k_ref);
  REQUIRE(stored);
  CHECK(stored->ref == k_ref);
  CHECK_FALSE(fs::exists(baked / ".artifact"));

  auto fsck = store->fsck();
  REQUIRE(fsck);
  CHECK(fsck->problems.empty());

  auto out = export_overlay_from_store(*store, "", t / "out");
  REQUIRE(out);
  CHECK(out->ref == k_ref);
  CHECK(out->digest == stored->digest);
  CHECK(out->files == std::vector<std::string>{"install.sh", "manifest.json", "overlay.tar",
                                               "packages/nvidia-container-toolkit-base_1.17.8-1_amd64.deb", "values.yaml"});
  for (const auto& f : out->files) CHECK(slurp(t / "out" / f) == slurp(baked / f));
  CHECK((fs::status(t / "out" / "install.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);

  // The same folder gives the same artifact digest in another store.
  auto other = Store::open(t / "store2", StoreAccess::Exclusive);
  REQUIRE(other);
  auto again = store_overlay(*other, baked, k_ref);
  REQUIRE(again);
  CHECK(again->digest == stored->digest);
}

TEST_CASE("export refuses a corrupt blob and writes nothing for it", "[node-overlay]") {
  TempDir t;
  auto baked = fake_bake(t / "baked");
  auto store = Store::open(t / "store", StoreAccess::Exclusive);
  REQUIRE(store);
  auto stored = store_overlay(*store, baked, k_ref);
  REQUIRE(stored);
  json man = json::parse(slurp(store->blob_path(stored->digest)));
  std::string values_digest;
  for (const auto& l : man["layers"])
    if (l["annotations"]["org.opencontainers.image.title"] == "values.yaml") values_digest = l["digest"];
  REQUIRE_FALSE(values_digest.empty());
  fs::path blob = store->blob_path(values_digest);
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
  spit(blob, "driver:\n  enabled: true\n");

  auto out = export_overlay_from_store(*store, k_ref, t / "out");
  REQUIRE_FALSE(out);
  CHECK_THAT(out.error().message, Catch::Contains("values.yaml") && Catch::Contains("does not match its digest"));
  // Nothing is renamed into place until every file checked out.
  for (const char* f : {"overlay.tar", "install.sh", "manifest.json", "values.yaml"}) CHECK_FALSE(fs::exists(t / "out" / f));
}

TEST_CASE("overlay artifacts refuse unsafe titles, ambiguity and a mismatched manifest.json", "[node-overlay]") {
  TempDir t;
  auto store = Store::open(t / "store", StoreAccess::Exclusive);
  REQUIRE(store);

  SECTION("two overlays and no ref: both are named") {
    REQUIRE(store_overlay(*store, fake_bake(t / "a"), k_ref));
    REQUIRE(store_overlay(*store, fake_bake(t / "b", "570.86.15"), "localhost/gpubundle/node-overlay:570.86.15-ubuntu22.04"));
    auto out = export_overlay_from_store(*store, "", t / "out");
    REQUIRE_FALSE(out);
    CHECK_THAT(out.error().message, Catch::Contains("2 node overlays") && Catch::Contains(k_ref) && Catch::Contains(":570.86.15-"));
    CHECK(export_overlay_from_store(*store, k_ref, t / "out"));
  }

  SECTION("a layer title that leaves the output folder") {
    const std::string evil = "../escaped";
    const std::string bytes = "x";
    REQUIRE(store->put_blob(sha256_digest(bytes), bytes));
    REQUIRE(store->put_blob(sha256_digest("{}"), "{}"));
    json m = {{"schemaVersion", 2},
              {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
              {"artifactType", k_node_overlay_artifact_type},
              {"config", {{"mediaType", "application/vnd.oci.empty.v1+json"}, {"digest", sha256_digest("{}")}, {"size", 2}}},
              {"layers",
               {{{"mediaType", "application/octet-stream"},
                 {"digest", sha256_digest(bytes)},
                 {"size", 1},
                 {"annotations", {{"org.opencontainers.image.title", evil}}}}}}};
    std::string mb = m.dump();
    REQUIRE(store->put_blob(sha256_digest(mb), mb));
    REQUIRE(store->add_images({StoredImage{k_ref, "application/vnd.oci.image.manifest.v1+json", sha256_digest(mb), mb.size(), {}}}));
    auto out = export_overlay_from_store(*store, k_ref, t / "out" / "inner");
    REQUIRE_FALSE(out);
    CHECK_THAT(out.error().message, Catch::Contains("'../escaped' is not a plain relative path"));
    CHECK_FALSE(fs::exists(t / "out" / "escaped"));
  }

  SECTION("a package manifest.json names must be a file in packages/") {
    auto baked = fake_bake(t / "a");
    fs::remove(baked / "packages" / "nvidia-container-toolkit-base_1.17.8-1_amd64.deb");
    fs::create_directory(baked / "packages" / "nvidia-container-toolkit-base_1.17.8-1_amd64.deb");
    auto stored = store_overlay(*store, baked, k_ref);
    REQUIRE_FALSE(stored);
    CHECK(stored.error().kind == ErrorKind::Input);
    CHECK_THAT(stored.error().message, Catch::Contains("package 'nvidia-container-toolkit-base_1.17.8-1_amd64.deb' is not a file"));
  }

  SECTION("malformed artifact JSON is an input error, not a crash") {
    REQUIRE(store->put_blob(sha256_digest("{}"), "{}"));
    json m = {{"schemaVersion", 2},
              {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
              {"artifactType", k_node_overlay_artifact_type},
              {"config", {{"mediaType", "application/vnd.oci.empty.v1+json"}, {"digest", sha256_digest("{}")}, {"size", 2}}},
              {"layers", {{{"mediaType", 7}, {"digest", sha256_digest("{}")}, {"size", 2}, {"annotations", "not an object"}}}}};
    std::string mb = m.dump();
    REQUIRE(store->put_blob(sha256_digest(mb), mb));
    REQUIRE(store->add_images({StoredImage{k_ref, "application/vnd.oci.image.manifest.v1+json", sha256_digest(mb), mb.size(), {}}}));
    auto out = export_overlay_from_store(*store, k_ref, t / "out");
    REQUIRE_FALSE(out);
    CHECK(out.error().kind == ErrorKind::Input);
    CHECK_THAT(out.error().message, Catch::Contains("layer title '' is not a plain relative path"));

    auto baked = fake_bake(t / "b");
    spit(baked / "manifest.json", R"({"driver": {"version": 580}, "overlay": {"sha256": 5}})");
    auto stored = store_overlay(*store, baked, k_ref);
    REQUIRE_FALSE(stored);
    CHECK(stored.error().kind == ErrorKind::Input);
  }

  SECTION("an export folder that already holds files is refused before any work") {
    REQUIRE(store_overlay(*store, fake_bake(t / "a"), k_ref));
    spit(t / "used" / "left-over.deb", "x");
    auto out = export_overlay_from_store(*store, k_ref, t / "used");
    REQUIRE_FALSE(out);
    CHECK_THAT(out.error().message, Catch::Contains("not an empty folder"));
    fs::create_directories(t / "empty");
    CHECK(export_overlay_from_store(*store, k_ref, t / "empty"));
    CHECK(fs::exists(t / "empty" / "overlay.tar"));
  }

  SECTION("a folder whose manifest.json names another overlay is not stored") {
    auto baked = fake_bake(t / "a");
    json m = json::parse(slurp(baked / "manifest.json"));
    m["overlay"]["sha256"] = std::string(64, '0');
    spit(baked / "manifest.json", m.dump(2));
    auto stored = store_overlay(*store, baked, k_ref);
    REQUIRE_FALSE(stored);
    CHECK_THAT(stored.error().message, Catch::Contains("is not the overlay manifest.json lists"));
    CHECK_FALSE(store->find_image(k_ref));
  }
}
