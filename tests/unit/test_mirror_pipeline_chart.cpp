#include <catch2/catch.hpp>

#include "common/files.hpp"
#include "mirror/chart_fetch.hpp"
#include "tests/unit/test_store_util.hpp"

using namespace gb;
using storetest::blob;
using storetest::FakeSource;
using storetest::Scratch;

namespace {
const std::string k_tgz = std::string("\x1f\x8b\x08\x00", 4) + "pretend chart archive";
}

TEST_CASE("chart from a Helm HTTP repository: version match, relative URL, digest check", "[mirror]") {
  Scratch t;
  FakeSource src;
  src.blobs["http://repo.test/charts/index.yaml"] =
      "apiVersion: v1\nentries:\n  gpu-operator:\n  - version: v24.9.1\n    urls: [gpu-operator-v24.9.1.tgz]\n"
      "  - version: v24.9.2\n    digest: " + sha256_hex(k_tgz) + "\n    urls: [gpu-operator-v24.9.2.tgz]\n";
  src.blobs["http://repo.test/charts/gpu-operator-v24.9.2.tgz"] = k_tgz;
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  auto c = fetch_chart("http://repo.test/charts/", "", "gpu-operator", "v24.9.2", store, src).value_or_throw();
  CHECK(c.fetched);
  CHECK(c.path == t / "store" / "charts" / "gpu-operator-v24.9.2.tgz");
  CHECK(read_file(c.path).value_or_throw() == k_tgz);
  CHECK_FALSE(fetch_chart("http://repo.test/charts", "", "gpu-operator", "v24.9.2", store, src).value_or_throw().fetched);

  auto missing = fetch_chart("http://repo.test/charts", "", "gpu-operator", "v99.0.0", store, src);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("has no version v99.0.0") != std::string::npos);

  src.blobs["http://repo.test/charts/gpu-operator-v24.9.1.tgz"] = "not gzip";
  CHECK_FALSE(fetch_chart("http://repo.test/charts", "", "gpu-operator", "v24.9.1", store, src));
  CHECK_FALSE(fs::exists(store.chart_path("gpu-operator", "v24.9.1")));
}

TEST_CASE("chart URLs resolve like Helm's", "[mirror]") {
  CHECK(resolve_chart_url("https://h.test/nvidia", "gpu-operator-v1.tgz") == "https://h.test/nvidia/gpu-operator-v1.tgz");
  CHECK(resolve_chart_url("https://h.test/nvidia/", "./x.tgz") == "https://h.test/nvidia/x.tgz");
  CHECK(resolve_chart_url("https://h.test/nvidia", "/files/x.tgz") == "https://h.test/files/x.tgz");
  CHECK(resolve_chart_url("https://h.test/nvidia", "https://cdn.test/x.tgz") == "https://cdn.test/x.tgz");
}

TEST_CASE("chart from an oci:// artifact", "[mirror]") {
  Scratch t;
  FakeSource src;
  auto layer = blob(k_tgz);
  auto cfg = blob("{}");
  src.add_blob(layer);
  src.add_blob(cfg);
  nlohmann::json m = {{"schemaVersion", 2},
                      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                      {"config", {{"mediaType", "application/vnd.cncf.helm.config.v1+json"}, {"digest", cfg.digest}, {"size", 2}}},
                      {"layers", {{{"mediaType", std::string(k_helm_chart_layer)}, {"digest", layer.digest}, {"size", layer.bytes.size()}}}}};
  src.manifests["reg.test/nvidia/helm/gpu-operator:v24.9.2"] = {"application/vnd.oci.image.manifest.v1+json", m.dump()};
  auto store = Store::open(t / "store", StoreAccess::Exclusive).value_or_throw();
  // The repository path with or without the chart name.
  auto c = fetch_chart("oci://reg.test/nvidia/helm", "", "gpu-operator", "v24.9.2", store, src).value_or_throw();
  CHECK(read_file(c.path).value_or_throw() == k_tgz);
  auto rows = (*store.catalog().value_or_throw()).charts().value_or_throw();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].source == "oci://reg.test/nvidia/helm");
  fs::remove(c.path);
  CHECK(fetch_chart("oci://reg.test/nvidia/helm/gpu-operator", "", "gpu-operator", "v24.9.2", store, src).value_or_throw().fetched);
}
