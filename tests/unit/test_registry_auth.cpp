#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>

#include "common/log.hpp"
#include "fixtures.hpp"
#include "mirror/registry_text.hpp"
#include "net/retry.hpp"
#include "net/url.hpp"
#include "mirror/registry_config.hpp"

using namespace gb;
using namespace gb::mirror;
using gbtest::spit;
using gbtest::TempDir;

namespace {

// Sets an environment variable for one scope and restores it afterwards.
class EnvVar {
public:
  EnvVar(const char* name, const std::optional<std::string>& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~EnvVar() {
    if (m_old)
      setenv(m_name, m_old->c_str(), 1);
    else
      unsetenv(m_name);
  }

private:
  const char* m_name;
  std::optional<std::string> m_old;
};

}  // namespace

TEST_CASE("WWW-Authenticate: bearer with quoted parameters", "[auth]") {
  auto cs = mirror::detail::parse_www_authenticate(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull,push")");
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].scheme == "bearer");
  CHECK(cs[0].param("realm") == "https://auth.docker.io/token");
  CHECK(cs[0].param("service") == "registry.docker.io");
  CHECK(cs[0].param("scope") == "repository:library/ubuntu:pull,push");  // the comma inside quotes stays
}

TEST_CASE("WWW-Authenticate: basic, several challenges, odd spacing", "[auth]") {
  auto b = mirror::detail::parse_www_authenticate(R"(Basic realm="Registry Realm")");
  REQUIRE(b.size() == 1);
  CHECK(b[0].scheme == "basic");
  CHECK(b[0].param("realm") == "Registry Realm");
  auto two = mirror::detail::parse_www_authenticate(R"(BEARER Realm="http://t/token" , Service=reg, Basic realm="x\"y")");
  REQUIRE(two.size() == 2);
  CHECK(two[0].scheme == "bearer");
  CHECK(two[0].param("realm") == "http://t/token");
  CHECK(two[0].param("service") == "reg");
  CHECK(two[1].scheme == "basic");
  CHECK(two[1].param("realm") == "x\"y");
  CHECK(mirror::detail::parse_www_authenticate("").empty());
}

TEST_CASE("registry error bodies, Link pagination, Location resolution", "[auth]") {
  auto e = mirror::detail::parse_registry_error(
      R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"x"}}]})");
  REQUIRE(e);
  CHECK(e->code == "MANIFEST_UNKNOWN");
  CHECK(e->message == "manifest unknown");
  CHECK_FALSE(mirror::detail::parse_registry_error("<html>bad gateway</html>"));
  CHECK_FALSE(mirror::detail::parse_registry_error(R"({"errors":[]})"));

  CHECK(mirror::detail::next_link(R"(</v2/a/tags/list?last=b&n=2>; rel="next")").value() == "/v2/a/tags/list?last=b&n=2");
  CHECK_FALSE(mirror::detail::next_link(R"(</v2/a/tags/list?last=b>; rel="prev")"));
  CHECK(net::resolve_url("http://h:5/v2/a/tags/list?n=2", "/v2/a/tags/list?last=b") == "http://h:5/v2/a/tags/list?last=b");
  CHECK(net::resolve_url("http://h:5/v2/a/blobs/uploads/", "https://s3/x?sig=1") == "https://s3/x?sig=1");
  CHECK(net::resolve_url("http://h:5/v2/a/blobs/uploads/", "abc") == "http://h:5/v2/a/blobs/uploads/abc");
  CHECK(net::url_host("https://user:pw@Reg.Example:5000/v2/") == "reg.example:5000");
  CHECK(net::base64_encode("robot:s3cret") == "cm9ib3Q6czNjcmV0");
  CHECK(net::base64_encode("a") == "YQ==");
  CHECK(net::retry_after_seconds(" 3 ").value() == 3);
  // HTTP dates: the wait until then, measured from `now`; a past date means no wait.
  const std::time_t t0 = 1445412480;  // Wed, 21 Oct 2015 07:28:00 GMT
  CHECK(net::retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", t0 - 30).value() == 30);
  CHECK(net::retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", t0 + 5).value() == 0);
  CHECK_FALSE(net::retry_after_seconds("Wed, 21 Oct 2015 07:28:00", t0));
  CHECK_FALSE(net::retry_after_seconds("soon"));
  CHECK(net::retry_after_seconds("99999999").value() == 86400);
}

TEST_CASE("docker auth files: auth, username/password, identitytoken", "[auth]") {
  std::string text = R"({"auths":{
    "https://index.docker.io/v1/": {"auth": "aHViOmh1YnB3"},
    "nvcr.io": {"username": "$oauthtoken", "password": "nvapi-x"},
    "https://quay.io": {"identitytoken": "refresh-me", "auth": "dTpw"},
    "ghcr.io": {},
    "bad.io": {"auth": "!!!"}
  }})";
  auto hub = credential_from_auth_file(text, "docker.io", "c.json");
  REQUIRE(hub.ok());
  REQUIRE(hub.value());
  CHECK(hub.value()->username == "hub");
  CHECK(hub.value()->password == "hubpw");
  auto hub2 = credential_from_auth_file(text, "registry-1.docker.io", "c.json");
  REQUIRE((hub2.ok() && hub2.value()));
  auto nv = credential_from_auth_file(text, "nvcr.io", "c.json");
  REQUIRE((nv.ok() && nv.value()));
  CHECK(nv.value()->username == "$oauthtoken");
  CHECK(nv.value()->password == "nvapi-x");
  auto quay = credential_from_auth_file(text, "quay.io", "c.json");
  REQUIRE((quay.ok() && quay.value()));
  CHECK(quay.value()->identity_token == "refresh-me");
  CHECK(quay.value()->password.empty());
  auto none = credential_from_auth_file(text, "ghcr.io", "c.json");  // credential helper stubs are empty
  REQUIRE(none.ok());
  CHECK_FALSE(none.value());
  auto bad = credential_from_auth_file(text, "bad.io", "c.json");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("c.json") && Catch::Contains("bad.io"));
  CHECK_FALSE(credential_from_auth_file("{nope", "x", "c.json").ok());
}

TEST_CASE("credential lookup order: config, REGISTRY_AUTH_FILE, DOCKER_CONFIG, HOME", "[auth]") {
  TempDir dir;
  spit(dir / "auth.json", R"({"auths":{"a.io":{"auth":"YTE6cDE="}}})");       // a1:p1
  std::filesystem::create_directories(dir / "docker");
  spit(dir / "docker" / "config.json", R"({"auths":{"a.io":{"auth":"YTI6cDI="},"b.io":{"auth":"YjI6cDI="}}})");
  std::filesystem::create_directories(dir / "home" / ".docker");
  spit(dir / "home" / ".docker" / "config.json", R"({"auths":{"c.io":{"username":"c3","password":"p3"}}})");
  EnvVar a("REGISTRY_AUTH_FILE", (dir / "auth.json").string());
  EnvVar d("DOCKER_CONFIG", (dir / "docker").string());
  EnvVar h("HOME", (dir / "home").string());
  RegistryConfig cfg;
  auto user = [&](const std::string& host) {
    auto c = find_credential(cfg, host);
    REQUIRE(c.ok());
    return c.value() ? c.value()->username : std::string("(none)");
  };
  CHECK(user("a.io") == "a1");
  CHECK(user("b.io") == "b2");
  CHECK(user("c.io") == "c3");
  CHECK(user("d.io") == "(none)");
  // The registry config wins over every file.
  spit(dir / "pw", "cfgpw");
  cfg.hosts["a.io"].username = "cfg";
  cfg.hosts["a.io"].password_file = (dir / "pw").string();
  CHECK(user("a.io") == "cfg");
  cfg.hosts["a.io"].password_file = (dir / "missing").string();
  auto missing = find_credential(cfg, "a.io");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("passwordFile"));
}

TEST_CASE("secrets never survive redaction", "[auth]") {
  CHECK(redact_url("https://robot:s3cret@reg.local/v2/") == "https://***@reg.local/v2/");
  auto r = redact_url("https://auth.example/token?service=x&access_token=abc&refresh_token=def");
  CHECK(r.find("abc") == std::string::npos);
  CHECK(r.find("def") == std::string::npos);
}

TEST_CASE("credentials stay on their origin: scheme, host and port", "[auth][hostile]") {
  CHECK(net::same_origin("https://reg.example/v2/a/blobs/uploads/x", "https://Reg.Example:443"));
  CHECK(net::same_origin("http://127.0.0.1:5000/v2/", "http://user:pw@127.0.0.1:5000"));
  CHECK_FALSE(net::same_origin("http://127.0.0.1:5001/v2/", "http://127.0.0.1:5000"));  // another port
  CHECK_FALSE(net::same_origin("http://reg.example/v2/", "https://reg.example"));        // another scheme
  CHECK_FALSE(net::same_origin("https://cdn.example/blob", "https://reg.example"));      // another host
  CHECK_FALSE(net::same_origin("https://reg.example.evil/x", "https://reg.example"));
  CHECK_FALSE(net::same_origin("/v2/relative", "https://reg.example"));
  CHECK_FALSE(net::same_origin("https://reg.example:99999/x", "https://reg.example:99999"));
  CHECK(net::url_origin("https://[::1]:5000/v2/")->port == 5000);
  CHECK(net::url_origin("https://[::1]:5000/v2/")->host == "[::1]");
  CHECK_FALSE(net::url_origin("ftp://reg.example/x"));
}

TEST_CASE("digests are checked before they reach a URL or a path", "[auth][hostile]") {
  CHECK(mirror::detail::is_valid_digest("sha256:" + std::string(64, 'a')));
  CHECK(mirror::detail::is_valid_digest("sha512:" + std::string(128, '0')));
  CHECK_FALSE(mirror::detail::is_valid_digest("sha512:../../../etc/hostname"));
  CHECK_FALSE(mirror::detail::is_valid_digest("sha256:" + std::string(64, 'A')));  // upper case
  CHECK_FALSE(mirror::detail::is_valid_digest("sha256:" + std::string(63, 'a')));
  CHECK_FALSE(mirror::detail::is_valid_digest("sha256:" + std::string(62, 'a') + "/."));
  CHECK_FALSE(mirror::detail::is_valid_digest("md5:" + std::string(32, 'a')));
  CHECK_FALSE(mirror::detail::is_valid_digest(""));
}

TEST_CASE("Retry-After is honoured up to a limit, then the request gives up", "[auth][hostile]") {
  CHECK(net::retry_delay_ms(0, 250, 3, 60, 1.0).value() == 3000);
  CHECK(net::retry_delay_ms(0, 250, 60, 60, 1.0).value() == 60000);
  CHECK_FALSE(net::retry_delay_ms(0, 250, 61, 60, 1.0));
  CHECK_FALSE(net::retry_delay_ms(0, 250, net::retry_after_seconds("100000"), 60, 1.0));
  // Without Retry-After: doubling backoff, jittered, capped at 10 s.
  CHECK(net::retry_delay_ms(0, 250, std::nullopt, 60, 1.0).value() == 250);
  CHECK(net::retry_delay_ms(2, 250, std::nullopt, 60, 0.5).value() == 500);
  CHECK(net::retry_delay_ms(30, 250, std::nullopt, 60, 1.0).value() == 10000);
}
