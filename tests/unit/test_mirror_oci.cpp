#include <catch2/catch.hpp>

#include "mirror/oci.hpp"
#include "signing/digest.hpp"

using namespace gb;

namespace {

const std::string k_layer = "sha256:" + std::string(64, 'a');
const std::string k_config = "sha256:" + std::string(64, 'b');

std::string image_manifest(const std::string& media_type, bool with_type = true) {
  std::string cfg_type = media_type == std::string(oci::k_docker_manifest)
                             ? "application/vnd.docker.container.image.v1+json"
                             : "application/vnd.oci.image.config.v1+json";
  return std::string(R"({"schemaVersion":2,)") + (with_type ? R"("mediaType":")" + media_type + R"(",)" : "") +
         R"("config":{"mediaType":")" + cfg_type + R"(","digest":")" + k_config + R"(","size":123},)" +
         R"("layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":")" + k_layer +
         R"(","size":4567,"annotations":{"a":"b"}}]})";
}

std::string index_manifest(const std::string& media_type) {
  return R"({"schemaVersion":2,"mediaType":")" + media_type + R"(","manifests":[)" +
         R"({"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" + k_layer +
         R"(","size":500,"platform":{"os":"linux","architecture":"amd64"}},)" +
         R"({"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" + k_config +
         R"(","size":501,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}}]})";
}

}  // namespace

TEST_CASE("image manifests of both families parse and keep their bytes", "[oci]") {
  for (auto mt : {oci::k_oci_manifest, oci::k_docker_manifest}) {
    std::string bytes = image_manifest(std::string(mt));
    auto m = oci::parse_manifest(bytes, mt);
    REQUIRE(m.ok());
    CHECK(m->media_type == mt);
    CHECK(m->bytes == bytes);
    CHECK(m->digest == sha256_digest(bytes));
    CHECK_FALSE(m->index());
    CHECK(m->config.digest == k_config);
    CHECK(m->config.size == 123);
    REQUIRE(m->layers.size() == 1);
    CHECK(m->layers[0].size == 4567);
    CHECK(m->layers[0].annotations.at("a") == "b");
  }
}

TEST_CASE("indexes and manifest lists parse with platforms", "[oci]") {
  for (auto mt : {oci::k_oci_index, oci::k_docker_list}) {
    // Content-Type parameters are not part of the media type.
    auto m = oci::parse_manifest(index_manifest(std::string(mt)), std::string(mt) + "; charset=utf-8");
    REQUIRE(m.ok());
    CHECK(m->index());
    REQUIRE(m->manifests.size() == 2);
    CHECK(m->manifests[0].platform.str() == "linux/amd64");
    CHECK(m->manifests[1].platform.str() == "linux/arm64/v8");
  }
}

TEST_CASE("an OCI manifest without mediaType is recognised by its shape", "[oci]") {
  auto m = oci::parse_manifest(image_manifest(std::string(oci::k_oci_manifest), false), "application/json");
  REQUIRE(m.ok());
  CHECK(m->media_type == oci::k_oci_manifest);
  auto served = oci::parse_manifest(image_manifest(std::string(oci::k_oci_manifest), false), oci::k_oci_manifest);
  REQUIRE(served.ok());
  CHECK(served->media_type == oci::k_oci_manifest);
}

TEST_CASE("malformed manifests are refused with a reason", "[oci]") {
  auto msg = [](const std::string& bytes, std::string_view mt = oci::k_oci_manifest) {
    auto m = oci::parse_manifest(bytes, mt);
    REQUIRE_FALSE(m.ok());
    return m.error().message;
  };
  CHECK_THAT(msg("{not json"), Catch::Contains("not valid JSON"));
  CHECK_THAT(msg("[1,2]"), Catch::Contains("not a JSON object"));
  CHECK_THAT(msg(R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","layers":[]})"),
             Catch::Contains("config is missing"));
  std::string bad_digest = image_manifest(std::string(oci::k_oci_manifest));
  bad_digest.replace(bad_digest.find(k_layer), k_layer.size(), "sha256:xyz");
  CHECK_THAT(msg(bad_digest), Catch::Contains("layers[0].digest"));
  std::string neg = image_manifest(std::string(oci::k_oci_manifest));
  neg.replace(neg.find("4567"), 4, "-1");
  CHECK_THAT(msg(neg), Catch::Contains("layers[0].size"));
  CHECK_THAT(msg(R"({"schemaVersion":1,"name":"x","fsLayers":[]})", "application/json"), Catch::Contains("schema 1"));
  CHECK_THAT(msg(R"({"schemaVersion":2,"mediaType":"application/vnd.example+json"})", "application/json"),
             Catch::Contains("unsupported media type"));
  // Body and Content-Type disagree: the spec says reject.
  CHECK_THAT(msg(image_manifest(std::string(oci::k_docker_manifest)), oci::k_oci_manifest),
             Catch::Contains("served as"));
  CHECK_THAT(msg(R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json"})", oci::k_oci_index),
             Catch::Contains("manifests is missing"));
}

TEST_CASE("platform matching", "[oci]") {
  oci::Platform p{"linux", "arm64", "v8"};
  CHECK(p.matches("linux/arm64"));
  CHECK(p.matches("linux/arm64/v8"));
  CHECK_FALSE(p.matches("linux/arm64/v9"));
  CHECK_FALSE(p.matches("linux/amd64"));
  CHECK_FALSE(p.matches("linux"));
  oci::Platform bare{"linux", "arm64", ""};
  CHECK(bare.matches("linux/arm64/v8"));  // v8 is implied for arm64
  oci::Platform arm{"linux", "arm", "v7"};
  CHECK_FALSE(arm.matches("linux/arm/v6"));
  CHECK(arm.matches("linux/arm"));
  CHECK(oci::Platform{"linux", "amd64", ""}.matches("linux/amd64"));
}

TEST_CASE("the Accept header lists all four manifest types", "[oci]") {
  auto a = oci::accept_header();
  for (auto mt : {oci::k_oci_manifest, oci::k_oci_index, oci::k_docker_manifest, oci::k_docker_list})
    CHECK(a.find(mt) != std::string::npos);
}
