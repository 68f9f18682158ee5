#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "common/progress.hpp"
#include "kit/driver_jobs.hpp"
#include "mirror/store.hpp"
#include "node-images/driver_plan.hpp"
#include "tests/unit/test_store_util.hpp"

using gb::node_images::DriverBuildResult;
using gb::node_images::DriverPlan;
using json = nlohmann::json;

namespace {

const std::string k1 = "6.1.0-57-amd64", k2 = "6.1.0-57-cloud-amd64";
std::string driver_ref(const std::string& k) { return "nvcr.io/nvidia/driver:580-" + k + "-ubuntu22.04"; }

gb::recipes::Lock precompiled_lock() {
  gb::recipes::Lock l;
  l.driver.mode = "precompiled";
  l.driver.branch = "580";
  l.os_tag = "ubuntu22.04";
  l.kernels = {k1, k2};
  l.platforms = {"linux/amd64", "linux/arm64"};
  for (const auto& k : l.kernels) l.images.push_back({{"driver"}, driver_ref(k), {}, "", "", {}});
  l.images.push_back({{"toolkit"}, "nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04", {}, "", "", {}});
  return l;
}

DriverPlan inputs(const std::string& push = "reg.test:5000/drivers") {
  DriverPlan in;
  in.recipe = "precompiled.yaml";
  in.installer = "NVIDIA-Linux-x86_64-580.95.05.run";
  in.push = push;
  return in;
}

}  // namespace

TEST_CASE("driver plan: one entry per kernel of the lock, amd64 only, each with its push name and args", "[driver-plan]") {
  auto plan = gb::node_images::plan_driver_builds(precompiled_lock(), inputs()).value_or_throw();
  REQUIRE(plan.entries.size() == 2);  // linux/arm64 has no entry: drivers are built for x86_64
  const auto& e = plan.entries[1];
  CHECK(e.index == 1);
  CHECK(e.kernel == k2);
  CHECK(e.image == driver_ref(k2));
  CHECK(e.repository == "nvcr.io/nvidia/driver");
  CHECK(e.pushed == "reg.test:5000/drivers/nvidia/driver:580-" + k2 + "-ubuntu22.04");
  CHECK(e.args == std::vector<std::string>{"driver", "build", "precompiled.yaml", "--kernel", k2, "--installer",
                                           "NVIDIA-Linux-x86_64-580.95.05.run", "--repository", "nvcr.io/nvidia/driver", "--os-tag",
                                           "ubuntu22.04", "--push", "reg.test:5000/drivers", "--result", "driver-result-1.json"});
  auto in = inputs();
  in.layout = "keep-host";
  auto kept = gb::node_images::plan_driver_builds(precompiled_lock(), in).value_or_throw();
  CHECK(kept.entries[0].pushed == "reg.test:5000/drivers/nvcr.io/nvidia/driver:580-" + k1 + "-ubuntu22.04");

  auto lock = precompiled_lock();
  lock.images.erase(lock.images.begin() + 1);
  auto missing = gb::node_images::plan_driver_builds(lock, inputs());
  REQUIRE(!missing);
  CHECK_THAT(missing.error().message, Catch::Contains("580-" + k2 + "-ubuntu22.04") && Catch::Contains("kernel " + k2));
  lock = precompiled_lock();
  lock.driver.mode = "conventional";
  CHECK(!gb::node_images::plan_driver_builds(lock, inputs()));
}

TEST_CASE("driver plan: the JSON reads back; a tampered plan is refused naming the field", "[driver-plan]") {
  auto plan = gb::node_images::plan_driver_builds(precompiled_lock(), inputs()).value_or_throw();
  std::string text = gb::node_images::plan_to_json(plan);
  auto back = gb::node_images::parse_plan(text, "plan.json").value_or_throw();
  REQUIRE(back.entries.size() == plan.entries.size());
  for (std::size_t i = 0; i < plan.entries.size(); ++i) CHECK(back.entries[i].args == plan.entries[i].args);

  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* says;
  };
  std::vector<Case> cases = {
      {"kind", [](json& j) { j["kind"] = "Lock"; }, "DriverBuildPlan"},
      {"index", [](json& j) { j["entries"][1]["index"] = 7; }, "entries[1].index"},
      {"kernel", [](json& j) { j["entries"][0]["kernel"] = "../../etc"; }, "entries[0].kernel"},
      {"image", [](json& j) { j["entries"][0]["image"] = "evil.example/driver:580-" + k1 + "-ubuntu22.04"; }, "entries[0].image"},
      {"platform", [](json& j) { j["entries"][0]["platform"] = "linux/arm64"; }, "entries[0].platform"},
      {"recipe", [](json& j) { j["recipe"] = "a\nb"; }, "recipe"},
      {"push", [](json& j) { j["push"] = "https://"; }, "push"},
      {"entries", [](json& j) { j["entries"] = json::array(); }, "entries"},
      {"type", [](json& j) { j["installer"] = 5; }, "installer"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    json j = json::parse(text);
    c.edit(j);
    auto r = gb::node_images::parse_plan(j.dump(), "plan.json");
    REQUIRE(!r);
    CHECK(r.error().kind == gb::ErrorKind::Input);
    CHECK_THAT(r.error().message, Catch::StartsWith("plan.json") && Catch::Contains(c.says));
  }
  CHECK(!gb::node_images::parse_plan("not json", "plan.json"));
}

TEST_CASE("driver results: one JSON object per line, every field checked", "[driver-plan]") {
  DriverBuildResult r{driver_ref(k1), "reg.test:5000/drivers/nvidia/driver:580-" + k1 + "-ubuntu22.04",
                      "sha256:" + std::string(64, 'a'), k1, "linux/amd64"};
  std::string line = gb::node_images::result_to_json(r);
  auto two = gb::node_images::parse_results(line + "\n\n" + line + "\n", "r.json").value_or_throw();
  REQUIRE(two.size() == 2);
  CHECK(two[1].pushed == r.pushed);
  auto bad = [&](const std::function<void(json&)>& edit, const char* says) {
    json j = json::parse(line);
    edit(j);
    auto p = gb::node_images::parse_results(line + "\n" + j.dump() + "\n", "r.json");
    REQUIRE(!p);
    CHECK_THAT(p.error().message, Catch::StartsWith("r.json:2") && Catch::Contains(says));
  };
  bad([](json& j) { j["digest"] = "sha256:abc"; }, "digest");
  bad([](json& j) { j["image"] = j["image"].get<std::string>() + "@sha256:" + std::string(64, 'b'); }, "tagged image reference");
  bad([](json& j) { j.erase("kernel"); }, "kernel");
  bad([](json& j) { j["kind"] = "DriverBuildPlan"; }, "DriverBuildResult");
  bad([](json& j) { j["platform"] = "linux/arm64"; }, "platform");
  CHECK(!gb::node_images::parse_results("\n \n", "empty.json"));
}

namespace {

// A build registry holding what the matrix pushed: driver images whose config
// labels name their kernel.
struct Matrix {
  storetest::Scratch dir;
  storetest::FakeSource registry;
  gb::recipes::Lock lock = precompiled_lock();
  std::vector<DriverBuildResult> results;

  Matrix() {
    for (const auto& k : lock.kernels) {
      json cfg = {{"architecture", "amd64"},
                  {"os", "linux"},
                  {"config", {{"Labels", {{"io.gpubundle.driver.kernel", k}, {"io.gpubundle.driver.version", "580.95.05"}}}}},
                  {"rootfs", {{"type", "layers"}}}};
      auto c = storetest::blob(cfg.dump());
      auto layer = storetest::blob("modules for " + k);
      registry.add_blob(c);
      registry.add_blob(layer);
      json m = {{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", c.digest}, {"size", c.bytes.size()}}},
                {"layers", json::array({{{"mediaType", "application/vnd.oci.image.layer.v1.tar+gzip"}, {"digest", layer.digest}, {"size", layer.bytes.size()}}})}};
      auto mb = storetest::blob(m.dump());
      std::string repo = "reg.test:5000/drivers/nvidia/driver";
      std::string tag = "580-" + k + "-ubuntu22.04";
      registry.manifests[repo + ":" + tag] = {"application/vnd.oci.image.manifest.v1+json", mb.bytes};
      registry.manifests[repo + "@" + mb.digest] = {"application/vnd.oci.image.manifest.v1+json", mb.bytes};
      results.push_back({driver_ref(k), repo + ":" + tag, mb.digest, k, "linux/amd64"});
    }
  }
  gb::Result<std::vector<gb::node_images::BuiltDriverImage>> take(const std::vector<DriverBuildResult>& rs) {
    auto store = gb::mirror::Store::open(dir / "store", gb::mirror::StoreAccess::Exclusive).value_or_throw();
    auto progress = gb::make_progress(gb::ProgressStyle::None);
    return gb::node_images::take_driver_results(lock, rs, store, registry, *progress);
  }
};

}  // namespace

TEST_CASE("assembly: each result's image pulled, checked and stored under the lock's name", "[driver-plan]") {
  Matrix m;
  auto taken = m.take(m.results).value_or_throw();
  REQUIRE(taken.size() == 2);
  CHECK(taken[0].ref == driver_ref(k1));
  CHECK(taken[0].digest == m.results[0].digest);
  auto store = gb::mirror::Store::open(m.dir / "store", gb::mirror::StoreAccess::Read).value_or_throw();
  auto stored = store.find_image(driver_ref(k2));
  REQUIRE(stored);
  CHECK(stored->digest == m.results[1].digest);
}

TEST_CASE("assembly refuses a missing, a foreign, a mislabelled or a moved result, naming the image", "[driver-plan]") {
  Matrix m;
  SECTION("missing") {
    auto r = m.take({m.results[0]});
    REQUIRE(!r);
    CHECK_THAT(r.error().message, Catch::Contains("no driver result for " + driver_ref(k2)));
  }
  SECTION("not in the lock") {
    auto rs = m.results;
    rs[1].image = "nvcr.io/nvidia/driver:580-9.9.9-ubuntu22.04";
    auto r = m.take(rs);
    REQUIRE(!r);
    CHECK_THAT(r.error().message, Catch::Contains("9.9.9") && Catch::Contains("lists no such"));
  }
  SECTION("another entry's image under this name") {
    auto rs = m.results;
    rs[0].pushed = m.results[1].pushed;
    rs[0].digest = m.results[1].digest;
    auto r = m.take(rs);
    REQUIRE(!r);
    CHECK_THAT(r.error().message, Catch::Contains(driver_ref(k1)) && Catch::Contains("built for kernel"));
  }
  SECTION("the tag moved after the entry pushed") {
    auto moved = m.registry.manifests[m.results[1].pushed];
    m.registry.manifests[m.results[0].pushed] = moved;
    auto r = m.take(m.results);
    REQUIRE(!r);
    CHECK_THAT(r.error().message, Catch::Contains(driver_ref(k1)) && Catch::Contains(m.results[0].digest));
  }
  // Nothing reached the lock's names.
  auto store = gb::mirror::Store::open(m.dir / "store", gb::mirror::StoreAccess::Exclusive).value_or_throw();
  CHECK(!store.find_image(driver_ref(k1)));
  CHECK(!store.find_image(driver_ref(k2)));
}

TEST_CASE("driver jobs: an Indexed Job and a Workflow with one index or step per entry", "[driver-plan][kit]") {
  gb::kit::DriverJobOptions o;
  o.image = "reg.test:5000/drivers/gpubundle/gpubundle:0.1.0";
  o.plan_json = "{}";
  o.entries = 3;
  o.parallelism = 5;  // more than there are entries
  o.sign_secret = "signing";
  auto docs = YAML::LoadAll(gb::kit::driver_build_job(o));
  REQUIRE(docs.size() == 2);
  CHECK(docs[0]["kind"].as<std::string>() == "ConfigMap");
  CHECK(docs[0]["data"]["plan.json"].as<std::string>() == "{}");
  const auto spec = docs[1]["spec"];
  CHECK(spec["completionMode"].as<std::string>() == "Indexed");
  CHECK(spec["completions"].as<int>() == 3);
  CHECK(spec["parallelism"].as<int>() == 3);
  auto pod = spec["template"]["spec"];
  CHECK(pod["restartPolicy"].as<std::string>() == "Never");
  bool keys = false, registry = false;
  for (const auto& v : pod["volumes"]) {
    keys = keys || v["name"].as<std::string>() == "keys";
    registry = registry || v["name"].as<std::string>() == "registry";
  }
  CHECK(keys);
  CHECK(!registry);  // no --registry-secret, no mount
  auto wf = YAML::LoadAll(gb::kit::driver_build_workflow(o));
  REQUIRE(wf.size() == 2);
  CHECK(wf[1]["spec"]["templates"][0]["steps"][0][0]["withSequence"]["count"].as<std::string>() == "3");
}
