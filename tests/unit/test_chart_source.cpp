#include <catch2/catch.hpp>

#include "common/files.hpp"
#include "mirror/chart_fetch.hpp"
#include "tests/unit/fixtures.hpp"
#include "tests/unit/test_store_util.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;
using storetest::FakeSource;

namespace {

const char* k_recipe = R"(apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site-a}
operator: {version: v24.9.2, chart: https://repo.test/charts}
target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, platforms: [linux/amd64]}
driver: {mode: conventional, version: "550.127.08"}
)";

// A chart with just enough to load: no resolver involved.
std::string tiny_chart(const gbtest::TempDir& t, const std::string& values = "driver: {version: 550.127.08}\n") {
  auto p = gbtest::pack_chart({{"Chart.yaml", "apiVersion: v2\nname: gpu-operator\nversion: v24.9.2\n"}, {"values.yaml", values}},
                              t / "tiny.tgz");
  return gbtest::slurp(p);
}

Lock lock_naming(const std::string& source, const std::string& sha256 = "") {
  Lock l;
  l.chart = {"gpu-operator", "v24.9.2", "v24.9.2", source, sha256};
  return l;
}

}  // namespace

TEST_CASE("chart source: --chart wins, relative paths start at the recipe's folder", "[chart-source]") {
  gbtest::TempDir t;
  fs::create_directories(t / "recipes" / "chart-folder");
  auto s = select_chart_source("", "gpu-operator-v24.9.2.tgz", t / "recipes");
  CHECK(s.origin == ChartOrigin::Archive);
  CHECK(s.location == (t / "recipes" / "gpu-operator-v24.9.2.tgz").string());
  CHECK(s.written == "gpu-operator-v24.9.2.tgz");
  CHECK(select_chart_source("", "chart-folder", t / "recipes").origin == ChartOrigin::Folder);
  CHECK(select_chart_source("", "./chart-folder/", t / "recipes").origin == ChartOrigin::Folder);

  auto flag = select_chart_source("local.tgz", "https://helm.ngc.nvidia.com/nvidia", t / "recipes");
  CHECK(flag.origin == ChartOrigin::Archive);
  CHECK(flag.location == "local.tgz");  // --chart is relative to the working folder, not the recipe's
  CHECK(select_chart_source("", "https://helm.ngc.nvidia.com/nvidia", t.path()).origin == ChartOrigin::HelmRepo);
  CHECK(select_chart_source("", "http://127.0.0.1:8080", t.path()).origin == ChartOrigin::HelmRepo);
  auto oci = select_chart_source("", "oci://nvcr.io/nvidia/helm", t.path());
  CHECK(oci.origin == ChartOrigin::Oci);
  CHECK(oci.remote());
  CHECK(oci.location == "oci://nvcr.io/nvidia/helm");
  CHECK(select_chart_source("", "", t.path()).origin == ChartOrigin::None);
}

TEST_CASE("the default lock is <recipe folder>/<metadata.name>.lock.json whatever the recipe file is called", "[chart-source]") {
  gbtest::TempDir t;
  gbtest::spit(t / "my-site.yaml", k_recipe);
  Recipe r = load_recipe(t / "my-site.yaml").value_or_throw();
  CHECK(default_lock_path(r) == t / "site-a.lock.json");
  CHECK(chart_file_name("gpu-operator", "v24.9.2") == "gpu-operator-v24.9.2.tgz");

  // bundle create and overrides find it from the recipe; before mirror they say what to run.
  auto none = lock_for(t / "my-site.yaml");
  REQUIRE_FALSE(none);
  CHECK(none.error().kind == ErrorKind::Input);
  CHECK(none.error().message.find("no lock at " + (t / "site-a.lock.json").string()) != std::string::npos);
  CHECK(none.error().message.find("run `gpubundle mirror " + (t / "my-site.yaml").string() + "` first") != std::string::npos);

  Lock l = lock_naming("https://repo.test/charts");
  l.recipe_name = "site-a";
  write_atomic(t / "site-a.lock.json", lock_to_json(l)).value_or_throw();
  auto found = lock_for(t / "my-site.yaml").value_or_throw();
  CHECK(found.file == t / "site-a.lock.json");
  CHECK(found.lock.recipe_name == "site-a");
  CHECK(lock_for(t / "site-a.lock.json").value_or_throw().file == t / "site-a.lock.json");
  CHECK(looks_like_lock("  \n{\"schemaVersion\": 1}"));
  CHECK_FALSE(looks_like_lock(k_recipe));
}

TEST_CASE("a chart folder packs like helm package, byte for byte the same each time", "[chart-source]") {
  gbtest::TempDir t;
  fs::create_directories(t / "c" / "charts" / "nfd");
  gbtest::spit(t / "c" / "Chart.yaml", "apiVersion: v2\nname: gpu-operator\nversion: v24.9.2\n");
  gbtest::spit(t / "c" / "values.yaml", "driver: {version: 550.127.08}\n");
  gbtest::spit(t / "c" / "charts" / "nfd" / "Chart.yaml", "apiVersion: v2\nname: nfd\nversion: 0.16.6\n");
  gbtest::spit(t / "c" / "templates.txt", "x");
  auto a = pack_chart_folder(t / "c").value_or_throw();
  auto b = pack_chart_folder(t / "c").value_or_throw();
  CHECK(a == b);
  REQUIRE(a.size() > 10);
  CHECK(a.substr(4, 4) == std::string(4, '\0'));  // no gzip timestamp
  Chart c = load_chart_archive(a, "packed").value_or_throw();
  CHECK(c.name == "gpu-operator");
  CHECK(c.values["driver"]["version"].as<std::string>() == "550.127.08");
  REQUIRE(c.subcharts.size() == 1);
  CHECK(c.subcharts[0].name == "nfd");

  fs::create_directories(t / "empty");
  CHECK_FALSE(pack_chart_folder(t / "empty"));
}

TEST_CASE("a lock's chart: fetched once into the store, then read offline; a different chart is refused", "[chart-source]") {
  gbtest::TempDir t;
  std::string tgz = tiny_chart(t);
  FakeSource src;
  src.blobs["https://repo.test/charts/index.yaml"] =
      "apiVersion: v1\nentries:\n  gpu-operator:\n  - version: v24.9.2\n    digest: " + sha256_hex(tgz) + "\n    urls: [x.tgz]\n";
  src.blobs["https://repo.test/charts/x.tgz"] = tgz;
  Lock lock = lock_naming("https://repo.test/charts", sha256_hex(tgz));

  // Offline (resolve, overrides) and not mirrored yet: says what to do.
  auto offline = lock_chart(lock, t / "a.lock.json", "", ChartAccess{t / "store"});
  REQUIRE_FALSE(offline);
  CHECK(offline.error().message.find("is remote and not in the store yet: run `gpubundle mirror`") != std::string::npos);

  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  ChartAccess online{store.root(), &store, &src};
  auto first = lock_chart(lock, t / "a.lock.json", "", online).value_or_throw();
  CHECK(first.fetched);
  CHECK(first.stored);
  CHECK(gbtest::slurp(store.chart_path("gpu-operator", "v24.9.2")) == tgz);

  src.blobs.clear();  // no network from here on
  auto again = lock_chart(lock, t / "a.lock.json", "", online).value_or_throw();
  CHECK_FALSE(again.fetched);
  CHECK_FALSE(again.stored);
  CHECK(lock_chart(lock, t / "a.lock.json", "", ChartAccess{t / "store"}).value_or_throw().archive == tgz);

  // --chart with other bytes than the lock was resolved against.
  auto other = gbtest::pack_chart({{"Chart.yaml", "apiVersion: v2\nname: gpu-operator\nversion: v24.9.2\n"}, {"values.yaml", "x: 1\n"}},
                                  t / "other.tgz");
  auto refused = lock_chart(lock, t / "a.lock.json", other.string(), online);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("is not the one the lock was resolved against") != std::string::npos);
  CHECK(gbtest::slurp(store.chart_path("gpu-operator", "v24.9.2")) == tgz);
}

TEST_CASE("a lock's local chart source is relative to the lock; a folder is packed into the store", "[chart-source]") {
  gbtest::TempDir t;
  fs::create_directories(t / "site" / "chart");
  gbtest::spit(t / "site" / "chart" / "Chart.yaml", "apiVersion: v2\nname: gpu-operator\nversion: v24.9.2\n");
  gbtest::spit(t / "site" / "chart" / "values.yaml", "a: 1\n");
  Lock lock = lock_naming("chart");
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  FakeSource src;
  auto c = lock_chart(lock, t / "site" / "a.lock.json", "", ChartAccess{store.root(), &store, &src}).value_or_throw();
  CHECK(c.stored);
  CHECK(gbtest::slurp(store.chart_path("gpu-operator", "v24.9.2")) == pack_chart_folder(t / "site" / "chart").value_or_throw());
  CHECK(src.gets == 0);

  auto missing = lock_chart(lock_naming(""), t / "a.lock.json", "", ChartAccess{t / "nostore"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("the lock names no source: pass --chart FILE") != std::string::npos);
}

TEST_CASE("a lock written away from its recipe points at the recipe's local chart from its own folder", "[chart-source]") {
  gbtest::TempDir t;
  fs::create_directories(t / "recipes");
  std::string text = k_recipe;
  text.replace(text.find("https://repo.test/charts"), std::string("https://repo.test/charts").size(), "charts/gpu-operator.tgz");
  gbtest::spit(t / "recipes" / "site.yaml", text);
  Recipe r = load_recipe(t / "recipes" / "site.yaml").value_or_throw();
  CHECK(chart_source_for_lock(r, t / "recipes" / "site-a.lock.json") == "charts/gpu-operator.tgz");  // beside it: as written
  CHECK(chart_source_for_lock(r, t / "locks" / "site-a.lock.json") == "../recipes/charts/gpu-operator.tgz");
  auto s = select_chart_source("", chart_source_for_lock(r, t / "locks" / "a.lock.json"), t / "locks");
  CHECK(fs::path(s.location) == (t / "recipes" / "charts" / "gpu-operator.tgz").lexically_normal());
  r.chart = "oci://nvcr.io/nvidia/helm";
  CHECK(chart_source_for_lock(r, t / "locks" / "a.lock.json") == "oci://nvcr.io/nvidia/helm");
}
