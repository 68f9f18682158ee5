#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "mirror/oci.hpp"
#include "signing/digest.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::signing;

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

namespace {

std::string d(char c) { return "sha256:" + std::string(64, c); }

// An index as buildx writes one: two platforms, each with its attestation
// manifest, and a top-level annotation.
std::string buildx_index() {
  nlohmann::json j = {{"schemaVersion", 2}, {"mediaType", std::string(oci::k_oci_index)}, {"annotations", {{"org.example", "kept"}}}};
  auto entry = [](const std::string& digest, const char* os, const char* arch) {
    return nlohmann::json{{"mediaType", std::string(oci::k_oci_manifest)}, {"digest", digest}, {"size", 700}, {"platform", {{"os", os}, {"architecture", arch}}}};
  };
  auto attest = [&](const std::string& digest, const std::string& of) {
    auto e = entry(digest, "unknown", "unknown");
    e["annotations"] = {{oci::k_reference_type_annotation, "attestation-manifest"}, {oci::k_reference_digest_annotation, of}};
    return e;
  };
  j["manifests"] = {entry(d('1'), "linux", "amd64"), entry(d('2'), "linux", "arm64"), attest(d('3'), d('1')), attest(d('4'), d('2'))};
  return j.dump(3);  // odd indent: the filtered index is written anew, compact
}

std::vector<std::string> digests(const std::vector<const oci::Descriptor*>& v) {
  std::vector<std::string> out;
  for (const auto* x : v) out.push_back(x->digest);
  return out;
}

}  // namespace

TEST_CASE("the children carried for platforms: matches, their attestations, or all", "[oci]") {
  auto index = oci::parse_manifest(buildx_index(), oci::k_oci_index).value_or_throw();
  std::vector<std::string> missing;
  CHECK(digests(oci::carried_children(index, {"linux/amd64"}, &missing)) == std::vector<std::string>{d('1'), d('3')});
  CHECK(missing.empty());
  CHECK(digests(oci::carried_children(index, {"linux/arm64"})) == std::vector<std::string>{d('2'), d('4')});
  CHECK(digests(oci::carried_children(index, {"linux/amd64", "linux/arm64"})).size() == 4);
  CHECK(digests(oci::carried_children(index, {"all"})).size() == 4);
  CHECK(digests(oci::carried_children(index, {"linux/ppc64le", "linux/amd64"}, &missing)) == std::vector<std::string>{d('1'), d('3')});
  CHECK(missing == std::vector<std::string>{"linux/ppc64le"});
  // An attestation names the manifest it attests by digest, never by platform.
  CHECK(digests(oci::carried_children(index, {"unknown/unknown"})).empty());
}

TEST_CASE("a filtered index lists only what travels, and is the same every time", "[oci]") {
  auto index = oci::parse_manifest(buildx_index(), oci::k_oci_index).value_or_throw();
  SECTION("every child carried: the upstream index itself") {
    CHECK_FALSE(oci::site_index(index, {"linux/amd64", "linux/arm64"}).value_or_throw());
    CHECK_FALSE(oci::site_index(index, {"all"}).value_or_throw());
  }
  SECTION("some carried: a new index of those, children and other fields untouched") {
    auto site = oci::site_index(index, {"linux/amd64"}).value_or_throw();
    REQUIRE(site);
    CHECK(site->media_type == index.media_type);
    CHECK(site->digest != index.digest);
    CHECK(site->digest == sha256_digest(site->bytes));
    REQUIRE(site->manifests.size() == 2);
    CHECK(site->manifests[0].digest == d('1'));
    CHECK(site->manifests[0].size == 700);
    CHECK(site->manifests[1].digest == d('3'));
    CHECK(site->manifests[1].annotations.at(oci::k_reference_digest_annotation) == d('1'));
    auto j = nlohmann::json::parse(site->bytes);
    CHECK(j["annotations"]["org.example"] == "kept");
    CHECK(j["schemaVersion"] == 2);
    // A pure function of the upstream bytes and the set carried.
    CHECK(oci::site_index(index, {"linux/amd64"}).value_or_throw()->bytes == site->bytes);
    CHECK(oci::filter_index(index, {d('3'), d('1')}).value_or_throw()->bytes == site->bytes);
    CHECK(site->bytes == nlohmann::json::parse(site->bytes).dump());
    auto arm = oci::site_index(index, {"linux/arm64"}).value_or_throw();
    REQUIRE(arm);
    CHECK(arm->digest != site->digest);
  }
  SECTION("a Docker manifest list stays one") {
    auto list = oci::parse_manifest(index_manifest(std::string(oci::k_docker_list)), oci::k_docker_list).value_or_throw();
    auto site = oci::site_index(list, {"linux/arm64"}).value_or_throw();
    REQUIRE(site);
    CHECK(site->media_type == oci::k_docker_list);
    REQUIRE(site->manifests.size() == 1);
    CHECK(site->manifests[0].platform.variant == "v8");
  }
  SECTION("nothing carried, or not an index, is refused") {
    CHECK_FALSE(oci::filter_index(index, {}));
    auto image = oci::parse_manifest(image_manifest(std::string(oci::k_oci_manifest)), oci::k_oci_manifest).value_or_throw();
    CHECK_FALSE(oci::filter_index(image, {}));
  }
}
