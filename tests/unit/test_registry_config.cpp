#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "mirror/registry_config.hpp"

using namespace gb;
using namespace gb::mirror;
using gbtest::spit;
using gbtest::TempDir;

TEST_CASE("registry config: every field, paths relative to the file", "[registry-config]") {
  TempDir dir;
  spit(dir / "ca.pem", "x");
  spit(dir / "c.pem", "x");
  spit(dir / "k.pem", "x");
  spit(dir / "pw.txt", "s3cret\n");
  spit(dir / "r.yaml", R"(hosts:
  nvcr.io:
    mirrors: ["http://127.0.0.1:5101/", "https://mirror.local"]
    fallback: false
    caFile: ca.pem
    clientCert: c.pem
    clientKey: k.pem
    insecureSkipVerify: true
    username: robot
    passwordFile: pw.txt
  127.0.0.1:5000:
    plainHttp: true
)");
  auto cfg = RegistryConfig::load(dir / "r.yaml");
  REQUIRE(cfg.ok());
  const HostConfig* h = cfg->host("nvcr.io");
  REQUIRE(h);
  CHECK(h->mirrors == std::vector<std::string>{"http://127.0.0.1:5101", "https://mirror.local"});
  CHECK_FALSE(h->fallback);
  CHECK(h->insecure_skip_verify);
  CHECK(h->ca_file == (dir / "ca.pem").string());
  CHECK(h->password_file == (dir / "pw.txt").string());

  auto eps = cfg->endpoints("nvcr.io");
  REQUIRE(eps.size() == 2);  // fallback: false
  CHECK(eps[0].base_url == "http://127.0.0.1:5101");
  CHECK(eps[0].host == "127.0.0.1:5101");
  CHECK(eps[0].mirror);
  CHECK(eps[1].host == "mirror.local");

  auto plain = cfg->endpoints("127.0.0.1:5000");
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].base_url == "http://127.0.0.1:5000");
  CHECK(cfg->push_endpoint("nvcr.io").base_url == "https://nvcr.io");

  auto cred = find_credential(cfg.value(), "nvcr.io");
  REQUIRE(cred.ok());
  REQUIRE(cred.value());
  CHECK(cred.value()->username == "robot");
  CHECK(cred.value()->password == "s3cret");
}

TEST_CASE("hosts without an entry and docker.io", "[registry-config]") {
  RegistryConfig cfg;
  auto eps = cfg.endpoints("quay.io");
  REQUIRE(eps.size() == 1);
  CHECK(eps[0].base_url == "https://quay.io");
  CHECK(eps[0].tls == nullptr);
  CHECK(cfg.endpoints("docker.io")[0].base_url == "https://registry-1.docker.io");
  cfg.hosts["docker.io"].mirrors = {"https://hub-mirror.local"};
  auto hub = cfg.endpoints("docker.io");
  REQUIRE(hub.size() == 2);
  CHECK(hub[0].base_url == "https://hub-mirror.local");
  CHECK(hub[1].base_url == "https://registry-1.docker.io");
}

TEST_CASE("registry config errors name the file, line and field", "[registry-config]") {
  TempDir dir;
  auto err = [&](const std::string& yaml) {
    spit(dir / "bad.yaml", yaml);
    auto cfg = RegistryConfig::load(dir / "bad.yaml");
    REQUIRE_FALSE(cfg.ok());
    CHECK(cfg.error().kind == ErrorKind::Input);
    CHECK_THAT(cfg.error().message, Catch::Contains("bad.yaml"));
    return cfg.error().message;
  };
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    mirors: [x]\n"), Catch::Contains("hosts.nvcr.io.mirors: unknown field"));
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    mirrors: [ftp://x]\n"), Catch::Contains("hosts.nvcr.io.mirrors[0]"));
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    fallback: maybe\n"), Catch::Contains("fallback: must be true or false"));
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    caFile: nope.pem\n"), Catch::Contains("nope.pem does not exist"));
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    password: hunter2\n"), Catch::Contains("passwordFile"));
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    fallback: false\n"), Catch::Contains("at least one mirror"));
  CHECK_THAT(err("hosts:\n  https://nvcr.io:\n    fallback: true\n"), Catch::Contains("without scheme"));
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    username: [a]\n"), Catch::Contains("hosts.nvcr.io.username"));
  CHECK_THAT(err("registries: {}\n"), Catch::Contains("registries: unknown key"));
  CHECK_THAT(err("hosts: [\n"), Catch::Contains("YAML syntax error"));
  CHECK_THAT(err("hosts:\n  nvcr.io:\n    mirrors: [x]\n"), Catch::Contains(":3:"));  // line numbers
  auto missing = RegistryConfig::load(dir / "absent.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("absent.yaml"));
}
