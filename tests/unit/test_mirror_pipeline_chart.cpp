#include <catch2/catch.hpp>

#include "common/files.hpp"
#include "mirror/chart_fetch.hpp"
#include "tests/unit/test_store_util.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;
using storetest::blob;
using storetest::FakeSource;

namespace {
const std::string k_tgz = std::string("\x1f\x8b\x08\x00", 4) + "pretend chart archive";
}

TEST_CASE("chart from a Helm HTTP repository: version match, relative URL, digest check", "[mirror]") {
  FakeSource src;
  src.blobs["http://repo.test/charts/index.yaml"] =
      "apiVersion: v1\nentries:\n  gpu-operator:\n  - version: v24.9.1\n    urls: [gpu-operator-v24.9.1.tgz]\n"
      "  - version: v24.9.2\n    digest: " + sha256_hex(k_tgz) + "\n    urls: [gpu-operator-v24.9.2.tgz]\n";
  src.blobs["http://repo.test/charts/gpu-operator-v24.9.2.tgz"] = k_tgz;
  auto repo = [](const std::string& url) { return select_chart_source("", url, ""); };
  CHECK(fetch_chart_archive(repo("http://repo.test/charts/"), "gpu-operator", "v24.9.2", src).value_or_throw() == k_tgz);
  CHECK(fetch_chart_archive(repo("http://repo.test/charts"), "gpu-operator", "24.9.2", src).value_or_throw() == k_tgz);

  auto missing = fetch_chart_archive(repo("http://repo.test/charts"), "gpu-operator", "v99.0.0", src);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("has no version v99.0.0") != std::string::npos);

  src.blobs["http://repo.test/charts/gpu-operator-v24.9.1.tgz"] = "not gzip";
  auto not_gzip = fetch_chart_archive(repo("http://repo.test/charts"), "gpu-operator", "v24.9.1", src);
  REQUIRE_FALSE(not_gzip);
  CHECK(not_gzip.error().message.find("is not a .tgz") != std::string::npos);
  src.blobs["http://repo.test/charts/gpu-operator-v24.9.2.tgz"] = k_tgz + "x";
  auto bad_digest = fetch_chart_archive(repo("http://repo.test/charts"), "gpu-operator", "v24.9.2", src);
  REQUIRE_FALSE(bad_digest);
  CHECK(bad_digest.error().message.find("differs from the repository index's") != std::string::npos);
}

TEST_CASE("chart URLs resolve like Helm's", "[mirror]") {
  CHECK(resolve_chart_url("https://h.test/nvidia", "gpu-operator-v1.tgz") == "https://h.test/nvidia/gpu-operator-v1.tgz");
  CHECK(resolve_chart_url("https://h.test/nvidia/", "./x.tgz") == "https://h.test/nvidia/x.tgz");
  CHECK(resolve_chart_url("https://h.test/nvidia", "/files/x.tgz") == "https://h.test/files/x.tgz");
  CHECK(resolve_chart_url("https://h.test/nvidia", "https://cdn.test/x.tgz") == "https://cdn.test/x.tgz");
}

TEST_CASE("chart from an oci:// artifact", "[mirror]") {
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
  // The repository path with or without the chart name.
  for (const char* url : {"oci://reg.test/nvidia/helm", "oci://reg.test/nvidia/helm/gpu-operator"})
    CHECK(fetch_chart_archive(select_chart_source("", url, ""), "gpu-operator", "v24.9.2", src).value_or_throw() == k_tgz);
  CHECK_FALSE(fetch_chart_archive(select_chart_source("", "oci://reg.test/nvidia/helm", ""), "gpu-operator", "v24.9.3", src));
}
