// gpubundle diff's logic on locks built in memory: field, component and image
// changes, the pairing of images by repository, bytes to ship from blob sizes
// (shared blobs counted once, blobs the old lock has left out, unknown sizes
// said), and the JSON's keys.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "recipes/lock_diff.hpp"

using namespace gb;
using namespace gb::recipes;

namespace {

LockImage image(const std::string& source, std::vector<std::string> components, const std::string& digest = "") {
  LockImage i;
  i.source = source;
  i.components = std::move(components);
  i.platforms = {"linux/amd64"};
  i.digest = digest;
  return i;
}

std::string dig(char c) { return "sha256:" + std::string(64, c); }

Lock base() {
  Lock l;
  l.recipe_name = "site-a";
  l.operator_version = "v25.10.1";
  l.chart = {"gpu-operator", "v25.10.1", "v25.10.1", "", ""};
  l.gpus = {"H100-SXM5-80GB"};
  l.os = "ubuntu22.04";
  l.os_tag = "ubuntu22.04";
  l.kernels = {"5.15.0-126-generic"};
  l.platforms = {"linux/amd64"};
  l.workloads = {"container"};
  l.driver = {"conventional", "570.172.08", "570", "open", false};
  l.images = {
      image("nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.8.1", {"driver.manager"}, dig('1')),
      image("nvcr.io/nvidia/driver:570.172.08-ubuntu22.04", {"driver"}, dig('2')),
      image("nvcr.io/nvidia/gpu-operator:v25.10.1", {"operator", "validator"}, dig('3')),
      image("nvcr.io/nvidia/k8s-device-plugin:v0.17.4", {"devicePlugin", "gfd"}, dig('4')),
  };
  return l;
}

Lock upgraded() {
  Lock l = base();
  l.operator_version = "v26.7.0";
  l.chart.version = l.chart.app_version = "v26.7.0";
  l.kernels = {"5.15.0-126-generic", "6.8.0-50-generic"};
  l.driver.version = "580.95.05";
  l.driver.branch = "580";
  l.images = {
      image("nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.8.1", {"driver.manager"}, dig('5')),  // re-pushed tag
      image("nvcr.io/nvidia/driver:580.95.05-ubuntu22.04", {"driver"}, dig('6')),
      image("nvcr.io/nvidia/gpu-operator:v26.7.0", {"operator", "validator"}, dig('7')),
      image("nvcr.io/nvidia/k8s-device-plugin:v0.17.4", {"devicePlugin", "gfd"}, dig('4')),  // unchanged
      image("nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0", {"draDriver"}, dig('8')),
  };
  return l;
}

const FieldChange* field(const LockDiff& d, const std::string& name) {
  for (const auto& f : d.fields)
    if (f.field == name) return &f;
  return nullptr;
}

}  // namespace

TEST_CASE("diff: identical locks differ in nothing", "[diff]") {
  Lock a = base();
  LockDiff d = diff_locks(a, a);
  CHECK_FALSE(d.differs());
  CHECK(d.ship.images.empty());
  d.old_file = d.new_file = "a.lock.json";
  CHECK(lock_diff_text(d, a, a).find("no differences") != std::string::npos);
  auto j = nlohmann::json::parse(lock_diff_json(d, a, a));
  CHECK_FALSE(j["differs"].get<bool>());
  CHECK(j["ship"]["bytes"].is_null());
}

TEST_CASE("diff: operator, driver, kernels, components and images", "[diff]") {
  Lock a = base(), b = upgraded();
  LockDiff d = diff_locks(a, b);
  REQUIRE(d.differs());
  REQUIRE(field(d, "operator.version"));
  CHECK(field(d, "operator.version")->new_values == std::vector<std::string>{"v26.7.0"});
  CHECK(field(d, "driver.version")->old_values == std::vector<std::string>{"570.172.08"});
  CHECK(field(d, "driver.branch"));
  CHECK_FALSE(field(d, "driver.mode"));
  CHECK_FALSE(field(d, "driver.kernelModuleType"));
  REQUIRE(field(d, "target.kernels"));
  CHECK(field(d, "target.kernels")->list);
  CHECK_FALSE(field(d, "target.os"));

  // Components whose image set changed; devicePlugin/gfd did not.
  std::vector<std::string> comps;
  for (const auto& c : d.components) comps.push_back(c.component);
  CHECK(comps == std::vector<std::string>{"draDriver", "driver", "operator", "validator"});
  // driver.manager kept its tag: not a component change, an image (digest) change.

  REQUIRE(d.added.size() == 1);
  CHECK(d.added[0].source == "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0");
  CHECK(d.removed.empty());
  REQUIRE(d.changed.size() == 3);
  CHECK(d.changed[0].repository == "nvcr.io/nvidia/cloud-native/k8s-driver-manager");
  CHECK(d.changed[0].old_source == d.changed[0].new_source);
  CHECK(d.changed[0].new_digest == dig('5'));
  CHECK(d.changed[1].repository == "nvcr.io/nvidia/driver");
  CHECK(d.changed[1].new_source == "nvcr.io/nvidia/driver:580.95.05-ubuntu22.04");
  CHECK(d.changed[2].components == std::vector<std::string>{"operator", "validator"});

  d.old_file = "old.lock.json";
  d.new_file = "new.lock.json";
  std::string text = lock_diff_text(d, a, b);
  CHECK(text.find("  operator.version          v25.10.1 -> v26.7.0\n") != std::string::npos);
  CHECK(text.find("  target.kernels            +6.8.0-50-generic\n") != std::string::npos);
  CHECK(text.find("  driver                    nvcr.io/nvidia/driver 570.172.08-ubuntu22.04 -> 580.95.05-ubuntu22.04\n") !=
        std::string::npos);
  CHECK(text.find("images: 1 added, 0 removed, 3 changed\n") != std::string::npos);
  CHECK(text.find("  + nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0\n") != std::string::npos);
  CHECK(text.find("  ~ nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.8.1 digest sha256:111111111111 -> sha256:555555555555\n") !=
        std::string::npos);
  CHECK(text.find("bytes to ship: unknown for 4 images (sizes come from a store") != std::string::npos);
  // Stable: the same input, the same text.
  LockDiff again = diff_locks(a, b);
  again.old_file = d.old_file;
  again.new_file = d.new_file;
  CHECK(lock_diff_text(again, a, b) == text);
}

TEST_CASE("diff: several tags of one repository pair only when one is left on each side", "[diff]") {
  Lock a = base(), b = base();
  a.images.push_back(image("nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", {"extraImages"}));
  a.images.push_back(image("nvcr.io/nvidia/cuda:12.6.0-base-ubuntu22.04", {"extraImages"}));
  b.images.push_back(image("nvcr.io/nvidia/cuda:12.6.0-base-ubuntu22.04", {"extraImages"}));
  b.images.push_back(image("nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04", {"extraImages"}));
  SECTION("one left each side: changed") {
    LockDiff d = diff_locks(a, b);
    REQUIRE(d.changed.size() == 1);
    CHECK(d.changed[0].old_source == "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04");
    CHECK(d.changed[0].new_source == "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04");
    CHECK(d.added.empty());
    CHECK(d.removed.empty());
  }
  SECTION("two new for one old: added") {
    b.images.push_back(image("nvcr.io/nvidia/cuda:12.9.0-base-ubuntu22.04", {"extraImages"}));
    LockDiff d = diff_locks(a, b);
    CHECK(d.changed.empty());
    CHECK(d.added.size() == 2);
    CHECK(d.removed.size() == 1);
  }
}

TEST_CASE("diff: bytes to ship count each new blob once and skip the old lock's", "[diff]") {
  Lock a = base(), b = upgraded();
  // Blob sizes per digest; the driver images share a base layer.
  std::map<std::string, std::map<std::string, std::uint64_t>> sized = {
      {dig('1'), {{"m1", 10}, {"base", 1000}}},
      {dig('2'), {{"m2", 10}, {"base", 1000}, {"drv570", 5000}}},
      {dig('3'), {{"m3", 10}, {"op25", 300}}},
      {dig('4'), {{"m4", 10}, {"dp", 200}}},
      {dig('5'), {{"m5", 10}, {"base", 1000}, {"dm2", 7}}},
      {dig('6'), {{"m6", 10}, {"base", 1000}, {"drv580", 6000}, {"shared-new", 50}}},
      {dig('7'), {{"m7", 10}, {"op26", 400}, {"shared-new", 50}}},
  };
  ImageBlobs blobs = [&](const LockImage& i) -> std::optional<std::map<std::string, std::uint64_t>> {
    auto it = sized.find(i.digest);
    if (it == sized.end()) return std::nullopt;
    return it->second;
  };
  LockDiff d = diff_locks(a, b, blobs, "store S");
  // Shipped: m5 dm2 | m6 drv580 shared-new | m7 op26 (shared-new once); dra driver unknown.
  CHECK(d.ship.bytes == 10 + 7 + 10 + 6000 + 50 + 10 + 400);
  CHECK(d.ship.any_sized);
  CHECK_FALSE(d.ship.complete);
  CHECK(d.ship.old_unsized == 0);
  REQUIRE(d.ship.images.size() == 4);
  CHECK(d.ship.images[0].source == "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.8.1");
  CHECK(d.ship.images[0].bytes == std::optional<std::uint64_t>(17));
  CHECK(d.ship.images[1].bytes == std::optional<std::uint64_t>(6060));
  CHECK(d.ship.images[3].source == "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0");
  CHECK_FALSE(d.ship.images[3].bytes);
  d.old_file = "o";
  d.new_file = "n";
  std::string text = lock_diff_text(d, a, b);
  CHECK(text.find("bytes to ship: at least 6.3 KiB (6487 bytes) for 4 images, sized by store S\n") != std::string::npos);
  CHECK(text.find("  unknown: nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0 (not in store S at the lock's digest)\n") !=
        std::string::npos);

  SECTION("an old image the sizer does not know is said, its blobs count") {
    sized.erase(dig('1'));
    LockDiff d2 = diff_locks(a, b, blobs, "store S");
    CHECK(d2.ship.old_unsized == 1);
    CHECK(d2.ship.bytes == d.ship.bytes);  // "base" is still had through the old driver image
    sized.erase(dig('2'));
    LockDiff d3 = diff_locks(a, b, blobs, "store S");
    CHECK(d3.ship.bytes == d.ship.bytes + 1000);
  }
  SECTION("JSON: sorted keys, sizes and nulls") {
    std::string text_json = lock_diff_json(d, a, b);
    auto j = nlohmann::json::parse(text_json);
    CHECK(j.dump(2) + "\n" == text_json);  // nlohmann objects keep keys sorted
    CHECK(j["schemaVersion"] == 1);
    CHECK(j["differs"].get<bool>());
    CHECK(j["fields"]["driver.version"]["new"] == "580.95.05");
    CHECK(j["fields"]["target.kernels"]["added"] == nlohmann::json::array({"6.8.0-50-generic"}));
    CHECK(j["fields"]["target.kernels"]["removed"].empty());
    CHECK(j["components"]["driver"]["new"][0] == "nvcr.io/nvidia/driver:580.95.05-ubuntu22.04");
    CHECK(j["images"]["added"][0]["components"][0] == "draDriver");
    CHECK(j["images"]["changed"].size() == 3);
    CHECK(j["ship"]["bytes"] == 6487);
    CHECK_FALSE(j["ship"]["complete"].get<bool>());
    CHECK(j["ship"]["images"][3]["bytes"].is_null());
    CHECK(j["ship"]["sizedBy"] == "store S");
  }
}

TEST_CASE("diff: driver mode and precompiled switch, host driver without a version", "[diff]") {
  Lock a = base(), b = base();
  b.driver = {"host", "", "", "auto", false};
  b.images.erase(b.images.begin() + 1);  // no driver image
  LockDiff d = diff_locks(a, b);
  REQUIRE(field(d, "driver.mode"));
  CHECK(field(d, "driver.version")->new_values == std::vector<std::string>{""});
  REQUIRE(d.removed.size() == 1);
  CHECK(d.removed[0].source == "nvcr.io/nvidia/driver:570.172.08-ubuntu22.04");
  d.old_file = d.new_file = "x";
  std::string text = lock_diff_text(d, a, b);
  CHECK(text.find("  driver.version            570.172.08 -> (none)\n") != std::string::npos);
  CHECK(text.find("  driver                    nvcr.io/nvidia/driver 570.172.08-ubuntu22.04 -> (none)\n") != std::string::npos);
  CHECK(text.find("bytes to ship: none (no new images)\n") != std::string::npos);
  Lock c = base();
  c.driver.use_precompiled = true;
  auto j = nlohmann::json::parse(lock_diff_json(diff_locks(a, c), a, c));
  CHECK(j["fields"]["driver.usePrecompiled"]["new"] == true);
}
