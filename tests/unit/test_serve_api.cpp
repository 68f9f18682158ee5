// serve/registry_api: the pull API's logic over an in-memory catalog, and
// the htpasswd users. The real server and real clients: tests/integration/serve.sh.
#include <catch2/catch.hpp>

#include <crypt.h>

#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "serve/registry_api.hpp"
#include "signing/digest.hpp"
#include "signing/signature.hpp"

using namespace gb;
using namespace gb::serve;
using namespace gb::signing;

namespace {

class MapBodies final : public BlobBodies {
public:
  std::map<std::string, std::string, std::less<>> blobs;
  std::set<std::string, std::less<>> tampered;
  int opens = 0;
  Result<std::optional<BlobBody>> open(std::string_view digest) override {
    ++opens;
    if (tampered.count(digest)) return op_error("blob " + std::string(digest) + " does not hash to its name");
    auto it = blobs.find(digest);
    if (it == blobs.end()) return std::optional<BlobBody>();
    const std::string* bytes = &it->second;
    BlobBody b;
    b.size = bytes->size();
    b.read = [bytes](std::uint64_t at, char* buf, std::size_t len) -> Result<std::size_t> {
      std::size_t n = std::min<std::size_t>(len, bytes->size() - at);
      std::memcpy(buf, bytes->data() + at, n);
      return n;
    };
    return std::optional<BlobBody>(std::move(b));
  }
};

struct Fixture {
  std::string layer = "0123456789abcdef";
  std::string layer_digest = sha256_digest(layer);
  std::string manifest = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"})";
  std::string manifest_digest = sha256_digest(manifest);
  std::string other = "not in this repository";
  std::string other_digest = sha256_digest(other);
  Catalog catalog;
  MapBodies bodies;
  Fixture() {
    Repository& r = catalog.repositories["gpu/nvidia/driver"];
    r.tags = {{"550-ubuntu22.04", manifest_digest}, {"a", manifest_digest}, {"b", manifest_digest}, {"c", manifest_digest}};
    r.digests = {manifest_digest, layer_digest};
    catalog.repositories["gpu/nvidia/other"].digests = {other_digest};
    catalog.manifests[manifest_digest] = {"application/vnd.oci.image.manifest.v1+json", manifest};
    bodies.blobs[layer_digest] = layer;
    bodies.blobs[other_digest] = other;
  }
};

HttpRequest get(std::string path, std::map<std::string, std::string> headers = {}, std::map<std::string, std::string> query = {}) {
  HttpRequest r;
  r.method = "GET";
  r.path = std::move(path);
  r.version = "HTTP/1.1";
  r.headers = std::move(headers);
  r.query = std::move(query);
  return r;
}

// The body a client would receive: bytes, or the reader run to the end.
std::string body_of(HttpResponse& r) {
  if (!r.reader) return r.body;
  std::string out(r.size, '\0');
  std::uint64_t at = 0;
  while (at < r.size) {
    long n = r.reader(at, out.data() + at, static_cast<std::size_t>(r.size - at));
    REQUIRE(n > 0);
    at += static_cast<std::uint64_t>(n);
  }
  return out;
}

std::string code_of(const HttpResponse& r) { return nlohmann::json::parse(r.body).at("errors").at(0).at("code"); }

std::string header(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

}  // namespace

TEST_CASE("serve: manifests by tag and by digest, with their type and digest", "[serve]") {
  Fixture f;
  RegistryApi api(f.catalog, f.bodies, nullptr);
  for (const auto& ref : {std::string("550-ubuntu22.04"), f.manifest_digest}) {
    auto r = api.handle(get("/v2/gpu/nvidia/driver/manifests/" + ref));
    CHECK(r.status == 200);
    CHECK(body_of(r) == f.manifest);
    CHECK(header(r, "Content-Type") == "application/vnd.oci.image.manifest.v1+json");
    CHECK(header(r, "Docker-Content-Digest") == f.manifest_digest);
    CHECK(header(r, "Docker-Distribution-API-Version") == "registry/2.0");
  }
  CHECK(code_of(api.handle(get("/v2/gpu/nvidia/driver/manifests/nope"))) == "MANIFEST_UNKNOWN");
  // Content negotiation: a client that accepts only Docker types is not handed an OCI manifest.
  auto docker_only = api.handle(get("/v2/gpu/nvidia/driver/manifests/a", {{"accept", "application/vnd.docker.distribution.manifest.v2+json"}}));
  CHECK(docker_only.status == 404);
  auto listed = api.handle(get("/v2/gpu/nvidia/driver/manifests/a",
                               {{"accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json;q=0.5"}}));
  CHECK(listed.status == 200);
  CHECK(api.handle(get("/v2/gpu/nvidia/driver/manifests/a", {{"accept", "*/*"}})).status == 200);
}

TEST_CASE("serve: a repository reads only its own closure", "[serve]") {
  Fixture f;
  RegistryApi api(f.catalog, f.bodies, nullptr);
  auto r = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.layer_digest));
  CHECK(r.status == 200);
  CHECK(body_of(r) == f.layer);
  auto cross = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.other_digest));
  CHECK(cross.status == 404);
  CHECK(code_of(cross) == "BLOB_UNKNOWN");
  CHECK(f.bodies.opens == 1);  // the other repository's blob was never opened
  CHECK(api.handle(get("/v2/gpu/nvidia/other/manifests/" + f.manifest_digest)).status == 404);
  CHECK(code_of(api.handle(get("/v2/gpu/nvidia/absent/blobs/" + f.layer_digest))) == "NAME_UNKNOWN");
  // A manifest is a blob of its repository too.
  auto m = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.manifest_digest));
  CHECK(body_of(m) == f.manifest);
}

TEST_CASE("serve: odd names, other digests and write methods are refused before any lookup", "[serve]") {
  Fixture f;
  RegistryApi api(f.catalog, f.bodies, nullptr);
  for (const std::string& path : std::vector<std::string>{"/v2/../etc/passwd/blobs/" + f.layer_digest, "/v2/gpu/nvidia/../driver/manifests/a",
                                                          "/v2/GPU/nvidia/driver/manifests/a", "/v2/gpu//nvidia/driver/manifests/a",
                                                          "/v2/gpu/nvidia/driver/./manifests/a"}) {
    auto r = api.handle(get(path));
    INFO(path);
    CHECK(r.status == 400);
    CHECK(code_of(r) == "NAME_INVALID");
  }
  for (const std::string& d : std::vector<std::string>{"sha512:" + std::string(128, 'a'), "md5:" + std::string(32, 'a'),
                                                       "sha256:" + std::string(64, 'A'), "sha256:" + std::string(63, 'a')}) {
    INFO(d);
    CHECK(code_of(api.handle(get("/v2/gpu/nvidia/driver/blobs/" + d))) == "DIGEST_INVALID");
    CHECK(code_of(api.handle(get("/v2/gpu/nvidia/driver/manifests/" + d))) == "DIGEST_INVALID");
  }
  for (const char* method : {"PUT", "POST", "PATCH", "DELETE", "OPTIONS"}) {
    HttpRequest r = get("/v2/gpu/nvidia/driver/blobs/uploads/");
    r.method = method;
    auto resp = api.handle(r);
    CHECK(resp.status == 405);
    CHECK(code_of(resp) == "UNSUPPORTED");
  }
  CHECK(api.handle(get("/v2/gpu/nvidia/driver/nothing/x")).status == 404);
  CHECK(api.handle(get("/etc/passwd")).status == 404);
  CHECK(f.bodies.opens == 0);
}

TEST_CASE("serve: one Range per request, checked against the size", "[serve]") {
  Fixture f;
  RegistryApi api(f.catalog, f.bodies, nullptr);
  auto part = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.layer_digest, {{"range", "bytes=2-5"}}));
  CHECK(part.status == 206);
  CHECK(body_of(part) == "2345");
  CHECK(header(part, "Content-Range") == "bytes 2-5/16");
  auto tail = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.layer_digest, {{"range", "bytes=-3"}}));
  CHECK(body_of(tail) == "def");
  auto open_end = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.layer_digest, {{"range", "bytes=10-999"}}));
  CHECK(body_of(open_end) == "abcdef");
  for (const char* bad : {"bytes=16-", "bytes=5-2", "bytes=0-1,4-5", "bytes=-0", "items=0-1", "bytes=x-1", "bytes=99999999999999999999-"}) {
    INFO(bad);
    auto r = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.layer_digest, {{"range", bad}}));
    CHECK(r.status == 416);
    CHECK(header(r, "Content-Range") == "bytes */16");
  }
  CHECK(parse_range("", 10).value() == std::nullopt);
  CHECK(!parse_range("bytes=0-", 0));
}

TEST_CASE("serve: a blob whose bytes fail their check gets an error, never bytes", "[serve]") {
  Fixture f;
  f.bodies.tampered.insert(f.layer_digest);
  RegistryApi api(f.catalog, f.bodies, nullptr);
  auto r = api.handle(get("/v2/gpu/nvidia/driver/blobs/" + f.layer_digest));
  CHECK(r.status == 500);
  CHECK(!r.reader);
  CHECK(!r.file);
  CHECK(r.body.find(f.layer) == std::string::npos);
}

TEST_CASE("serve: tags and the catalog page with n and last, and a Link to the next page", "[serve]") {
  Fixture f;
  RegistryApi api(f.catalog, f.bodies, nullptr);
  auto all = nlohmann::json::parse(api.handle(get("/v2/gpu/nvidia/driver/tags/list")).body);
  CHECK(all.at("name") == "gpu/nvidia/driver");
  CHECK(all.at("tags") == nlohmann::json({"550-ubuntu22.04", "a", "b", "c"}));
  auto first = api.handle(get("/v2/gpu/nvidia/driver/tags/list", {}, {{"n", "2"}}));
  CHECK(nlohmann::json::parse(first.body).at("tags") == nlohmann::json({"550-ubuntu22.04", "a"}));
  CHECK(header(first, "Link") == "</v2/gpu/nvidia/driver/tags/list?last=a&n=2>; rel=\"next\"");
  auto second = api.handle(get("/v2/gpu/nvidia/driver/tags/list", {}, {{"n", "2"}, {"last", "a"}}));
  CHECK(nlohmann::json::parse(second.body).at("tags") == nlohmann::json({"b", "c"}));
  CHECK(header(second, "Link").empty());
  CHECK(api.handle(get("/v2/gpu/nvidia/driver/tags/list", {}, {{"n", "-1"}})).status == 400);
  auto repos = nlohmann::json::parse(api.handle(get("/v2/_catalog", {}, {{"n", "1"}, {"last", "gpu/nvidia/driver"}})).body);
  CHECK(repos.at("repositories") == nlohmann::json({"gpu/nvidia/other"}));
}

TEST_CASE("serve: htpasswd users, bcrypt only, checked per request", "[serve]") {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt));
  crypt_data data{};
  std::string hash = crypt_r("s3cret", salt, &data);
  auto users = Users::parse("\nsite:" + hash + "\n", "users.htpasswd");
  REQUIRE(users);
  Fixture f;
  RegistryApi api(f.catalog, f.bodies, &users.value());
  auto denied = api.handle(get("/v2/"));
  CHECK(denied.status == 401);
  CHECK(header(denied, "WWW-Authenticate") == "Basic realm=\"gpubundle serve\"");
  auto basic = [](const std::string& pair) { return std::map<std::string, std::string>{{"authorization", "Basic " + base64_encode(pair)}}; };
  auto ok = api.handle(get("/v2/", basic("site:s3cret")));
  CHECK(ok.status == 200);
  CHECK(ok.user == "site");
  CHECK(api.handle(get("/v2/", basic("site:s3cret"))).status == 200);  // remembered
  CHECK(api.handle(get("/v2/", basic("site:wrong"))).status == 401);
  CHECK(api.handle(get("/v2/", basic("other:s3cret"))).status == 401);
  CHECK(api.handle(get("/v2/", {{"authorization", "Bearer x"}})).status == 401);
  CHECK(api.handle(get("/v2/gpu/nvidia/driver/manifests/a")).status == 401);
  // Write methods are refused as such, signed in or not.
  HttpRequest put = get("/v2/gpu/nvidia/driver/manifests/a");
  put.method = "PUT";
  CHECK(api.handle(put).status == 405);

  CHECK(!Users::parse("site:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "u"));
  CHECK(!Users::parse("site:$apr1$abc$def\n", "u"));
  CHECK(!Users::parse("site:" + hash + "\nsite:" + hash + "\n", "u"));
  CHECK(!Users::parse("", "u"));
  auto bad = Users::parse("nocolon\n", "users.htpasswd");
  REQUIRE(!bad);
  CHECK(bad.error().message == "users.htpasswd line 1: not USER:HASH");
}

TEST_CASE("serve: routes", "[serve]") {
  auto r = parse_route("/v2/a/b/c/manifests/latest");
  REQUIRE(r);
  CHECK(r->name == "a/b/c");
  CHECK(r->kind == "manifests");
  CHECK(r->ref == "latest");
  auto blobs_named = parse_route("/v2/blobs/blobs/sha256:x");
  REQUIRE(blobs_named);
  CHECK(blobs_named->name == "blobs");
  CHECK(!parse_route("/v2/a/tags/other"));
  CHECK(!parse_route("/v2/manifests/x"));
  CHECK(!parse_route("/v1/a/manifests/x"));
  CHECK(is_valid_repository_name("gpu/nvidia/k8s-device-plugin"));
  CHECK(!is_valid_repository_name("gpu/nvidia/"));
  CHECK(!is_valid_repository_name(std::string(256, 'a')));
}
