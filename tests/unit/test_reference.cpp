#include <catch2/catch.hpp>

#include "recipes/reference.hpp"

using gb::recipes::Reference;

TEST_CASE("docker hub short names normalise like docker", "[reference]") {
  auto r = Reference::parse("ubuntu").value();
  CHECK(r.registry == "docker.io");
  CHECK(r.repository == "library/ubuntu");
  CHECK(r.tag == "latest");
  CHECK(r.str() == "docker.io/library/ubuntu:latest");
  CHECK(Reference::parse("bitnami/redis:7").value().str() == "docker.io/bitnami/redis:7");
  CHECK(Reference::parse("index.docker.io/library/busybox:1").value().str() == "docker.io/library/busybox:1");
}

TEST_CASE("hosts with ports, localhost and nested paths", "[reference]") {
  auto r = Reference::parse("127.0.0.1:5000/nvidia/cloud-native/k8s-driver-manager:v0.7.0").value();
  CHECK(r.registry == "127.0.0.1:5000");
  CHECK(r.repository == "nvidia/cloud-native/k8s-driver-manager");
  CHECK(r.tag == "v0.7.0");
  auto l = Reference::parse("localhost/foo").value();
  CHECK(l.registry == "localhost");
  CHECK(l.repository == "foo");
  auto noport = Reference::parse("registry.k8s.io/nfd/node-feature-discovery:v0.16.6").value();
  CHECK(noport.registry == "registry.k8s.io");
  CHECK(Reference::parse("[::1]:5000/a/b:c").value().registry == "[::1]:5000");
}

TEST_CASE("digests, with and without tags", "[reference]") {
  std::string d = "sha256:" + std::string(64, 'a');
  auto r = Reference::parse("nvcr.io/nvidia/driver@" + d).value();
  CHECK(r.tag.empty());
  CHECK(r.digest == d);
  CHECK(r.str() == "nvcr.io/nvidia/driver@" + d);
  CHECK(r.pinned() == "nvcr.io/nvidia/driver@" + d);
  auto both = Reference::parse("nvcr.io/nvidia/driver:550.127.08-ubuntu22.04@" + d).value();
  CHECK(both.tag == "550.127.08-ubuntu22.04");
  CHECK(both.digest == d);
  CHECK(both.pinned() == "nvcr.io/nvidia/driver:550.127.08-ubuntu22.04");
}

TEST_CASE("invalid references are refused with the reason", "[reference]") {
  for (std::string bad : {"", "UPPER/case", "nvcr.io/nvidia/driver:", "nvcr.io/nvidia/driver:-x", "a b",
                          "nvcr.io/nvidia/driver@sha256:abc", "nvcr.io//driver", "nvcr.io/nvidia/driver:tag+plus",
                          "nvcr.io:/x", "host:99x/a", "nvcr.io/-bad", "nvcr.io/bad-/x", ":tag"}) {
    INFO(bad);
    auto r = Reference::parse(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("invalid image reference") != std::string::npos);
  }
  CHECK_FALSE(Reference::parse("x:" + std::string(129, 'a')).ok());
}

TEST_CASE("rehoming keeps the path and swaps the host", "[reference]") {
  auto r = Reference::parse("nvcr.io/nvidia/driver:550.127.08-ubuntu22.04").value();
  CHECK(r.rehomed("registry.site:5000", "gpu").str() == "registry.site:5000/gpu/nvidia/driver:550.127.08-ubuntu22.04");
  CHECK(r.rehomed("registry.site:5000", "").str() == "registry.site:5000/nvidia/driver:550.127.08-ubuntu22.04");
  CHECK(r.rehomed("r.site", "gpu", true).str() == "r.site/gpu/nvcr.io/nvidia/driver:550.127.08-ubuntu22.04");
}
