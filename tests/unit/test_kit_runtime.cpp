// The nodes' runtime config in the kit (kit/kit_runtime.cpp): containerd's
// hosts.toml per source host, the CRI-O drop-in, the site registry's CA.
#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "kit/kit.hpp"
#include "tests/unit/kit_fixture.hpp"

using namespace gb;
using namespace gb::kit_test;
using namespace gb::recipes;
using nlohmann::json;

TEST_CASE("runtime config maps every source host to the site registry", "[kit][runtime]") {
  Lock l = fixture_lock();
  auto made = kit::make_kit(l, fixture_chart(), options());
  INFO((made ? std::string() : made.error().message));
  REQUIRE(made.ok());
  const kit::Kit& k = *made;
  // containerd: override_path with a prefix; the site registry gets its own file.
  const std::string& nvcr = file(k, "containerd/certs.d/nvcr.io/hosts.toml");
  CHECK(contains(nvcr, "server = \"https://nvcr.io\""));
  CHECK(contains(nvcr, "[host.\"https://registry.site:5000/v2/gpu\"]"));
  CHECK(contains(nvcr, "capabilities = [\"pull\", \"resolve\"]"));
  CHECK(contains(nvcr, "override_path = true"));
  CHECK(contains(nvcr, "/etc/containerd/certs.d/registry.site:5000/ca.crt"));
  CHECK(contains(file(k, "containerd/certs.d/registry.k8s.io/hosts.toml"), "server = \"https://registry.k8s.io\""));
  // CRI-O.
  const std::string& crio = file(k, "crio/registries.conf.d/99-gpubundle.conf");
  CHECK(contains(crio, "[[registry]]\nprefix = \"nvcr.io\"\nlocation = \"nvcr.io\"\n\n[[registry.mirror]]\nlocation = \"registry.site:5000/gpu\"\ninsecure = false"));
  CHECK(contains(crio, "prefix = \"registry.k8s.io\""));
  CHECK(contains(crio, "/etc/containers/certs.d/registry.site:5000/ca.crt"));
}

TEST_CASE("runtime config for keep-host over plain HTTP, and strip-host without a prefix", "[kit][runtime]") {
  Lock l = fixture_lock();
  auto k = kit::make_kit(l, fixture_chart(), options("http://127.0.0.1:5000", kit::Layout::KeepHost)).value();
  const std::string& nvcr = file(k, "containerd/certs.d/nvcr.io/hosts.toml");
  CHECK(contains(nvcr, "[host.\"http://127.0.0.1:5000/v2/nvcr.io\"]"));
  CHECK(contains(nvcr, "override_path = true"));
  CHECK(contains(file(k, "crio/registries.conf.d/99-gpubundle.conf"), "location = \"127.0.0.1:5000/nvcr.io\"\ninsecure = true"));

  // Strip-host without a prefix needs no path override.
  auto flat = kit::make_kit(l, fixture_chart(), options("reg.site")).value();
  CHECK_FALSE(contains(file(flat, "containerd/certs.d/nvcr.io/hosts.toml"), "override_path"));
  CHECK(contains(file(flat, "containerd/certs.d/nvcr.io/hosts.toml"), "[host.\"https://reg.site\"]"));
}

TEST_CASE("the CRI-O drop-in names the site registry itself; a given CA rides along for both runtimes", "[kit][runtime]") {
  Lock l = fixture_lock();
  // Plain HTTP: values.yaml names 127.0.0.1:5000/... for every pod, so CRI-O must
  // reach that host over HTTP too, not only the mirrors of the source hosts.
  auto http = kit::make_kit(l, fixture_chart(), options("http://127.0.0.1:5000/gpu")).value();
  const std::string& crio = file(http, "crio/registries.conf.d/99-gpubundle.conf");
  CHECK(contains(crio, "[[registry]]\nprefix = \"127.0.0.1:5000\"\nlocation = \"127.0.0.1:5000\"\ninsecure = true\n"));
  CHECK(contains(crio, "location = \"127.0.0.1:5000/gpu\"\ninsecure = true"));
  CHECK_FALSE(contains(crio, "ca.crt"));
  CHECK_FALSE(contains(file(http, "containerd/certs.d/127.0.0.1:5000/hosts.toml"), "ca.crt"));

  // HTTPS without a CA: the entry is there, TLS verified; the ca lines stay commented.
  auto https = kit::make_kit(l, fixture_chart(), options()).value();
  CHECK(contains(file(https, "crio/registries.conf.d/99-gpubundle.conf"),
                 "prefix = \"registry.site:5000\"\nlocation = \"registry.site:5000\"\ninsecure = false\n"));
  CHECK(contains(file(https, "containerd/certs.d/nvcr.io/hosts.toml"), "  # ca = \"../registry.site:5000/ca.crt\"\n"));
  CHECK(https.find("containerd/certs.d/registry.site:5000/ca.crt") == nullptr);

  // HTTPS with the site's CA: carried for both runtimes, and containerd points
  // at it relative to each hosts.toml, so the path holds in the kit and on a node.
  auto o = options();
  o.registry_ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto ca = kit::make_kit(l, fixture_chart(), o).value();
  CHECK(file(ca, "containerd/certs.d/registry.site:5000/ca.crt") == o.registry_ca);
  CHECK(file(ca, "crio/certs.d/registry.site:5000/ca.crt") == o.registry_ca);
  CHECK(contains(file(ca, "containerd/certs.d/nvcr.io/hosts.toml"), "\n  ca = \"../registry.site:5000/ca.crt\"\n"));
  CHECK(contains(file(ca, "containerd/certs.d/registry.k8s.io/hosts.toml"), "\n  ca = \"../registry.site:5000/ca.crt\"\n"));
  CHECK(contains(file(ca, "containerd/certs.d/registry.site:5000/hosts.toml"), "\n  ca = \"ca.crt\"\n"));
  json m = json::parse(file(ca, "manifest.json"));
  CHECK(std::find(m["files"].begin(), m["files"].end(), "crio/certs.d/registry.site:5000/ca.crt") != m["files"].end());
  // ...but never for plain HTTP.
  auto o2 = options("http://127.0.0.1:5000");
  o2.registry_ca = o.registry_ca;
  CHECK(kit::make_kit(l, fixture_chart(), o2).value().find("crio/certs.d/127.0.0.1:5000/ca.crt") == nullptr);
}

