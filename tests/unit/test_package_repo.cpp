// The site package repository: the apt index and Release the writer makes
// (mirror/package_repo.hpp) and the lock's packageRepo. In memory; the signed
// repository read by real apt is tests/integration/package_repo.sh.

#include <catch2/catch.hpp>

#include "mirror/package_repo.hpp"
#include "recipes/lock.hpp"
#include "signing/digest.hpp"

using namespace gb;

namespace {

packages::Package pkg(const std::string& name, const std::string& version, const std::string& arch, const std::string& file) {
  packages::Package p;
  p.name = name;
  p.version = version;
  p.arch = arch;
  p.location = "pool/main/l/linux/" + file;
  p.repo_url = "http://deb.example/debian";
  p.sha256 = sha256_hex(file);
  p.size = 1000 + file.size();
  p.entry = "Package: " + name + "\nSource: linux\nVersion: " + version + "\nArchitecture: " + arch +
            "\nDescription: headers\n multi-line, kept\n .\n as is\nFilename: " + p.location + "\nSize: " +
            std::to_string(p.size) + "\nSHA256: " + p.sha256;
  return p;
}

}  // namespace

TEST_CASE("Packages: verbatim stanzas, Filename into pool/, arch all under every architecture", "[package-repo]") {
  std::vector<packages::Package> in = {
      pkg("linux-kbuild-6.1", "6.1.158-1", "amd64", "linux-kbuild-6.1_6.1.158-1_amd64.deb"),
      pkg("linux-headers-6.1.0-41-common", "6.1.158-1", "all", "linux-headers-6.1.0-41-common_6.1.158-1_all.deb"),
      pkg("linux-headers-6.1.0-41-amd64", "6.1.158-1", "amd64", "linux-headers-6.1.0-41-amd64_6.1.158-1_amd64.deb"),
      pkg("linux-headers-6.1.0-41-arm64", "6.1.158-1", "arm64", "linux-headers-6.1.0-41-arm64_6.1.158-1_arm64.deb"),
  };
  in.push_back(in[0]);  // fetched again for a second kernel: once in the index
  auto amd64 = package_repo::apt_packages(in, "amd64");
  REQUIRE(amd64.ok());
  std::string expected;
  for (int i : {2, 1, 0}) {  // sorted by name
    std::string stanza = in[static_cast<size_t>(i)].entry;
    stanza.replace(stanza.find("Filename: ") + 10, in[static_cast<size_t>(i)].location.size(),
                   "pool/" + in[static_cast<size_t>(i)].file_name());
    expected += (expected.empty() ? "" : "\n") + stanza + "\n";
  }
  CHECK(*amd64 == expected);
  CHECK(amd64->find("SHA256: " + in[2].sha256 + "\n") != std::string::npos);  // the upstream signed hash stays

  auto arm64 = package_repo::apt_packages(in, "arm64");
  REQUIRE(arm64.ok());
  CHECK(arm64->find("Package: linux-headers-6.1.0-41-common\n") != std::string::npos);
  CHECK(arm64->find("Package: linux-headers-6.1.0-41-arm64\n") != std::string::npos);
  CHECK(arm64->find("amd64") == std::string::npos);
}

TEST_CASE("Packages: refused when a file name is reused for other bytes, missing or not plain", "[package-repo]") {
  auto a = pkg("linux-kbuild-6.1", "6.1.158-1", "amd64", "linux-kbuild-6.1_6.1.158-1_amd64.deb");
  auto b = a;
  b.repo_url = "http://other.example/debian";
  b.sha256 = std::string(64, 'f');
  auto r = package_repo::apt_packages({a, b}, "amd64");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK_THAT(r.error().message, Catch::Contains("linux-kbuild-6.1_6.1.158-1_amd64.deb") && Catch::Contains("other.example"));

  auto no_file = a;
  no_file.entry = "Package: x\nVersion: 1";
  CHECK_FALSE(package_repo::apt_packages({no_file}, "amd64").ok());

  auto dotted = a;
  dotted.location = "pool/..";
  auto d = package_repo::apt_packages({dotted}, "amd64");
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(d.error().message, Catch::Contains("not a plain file name"));
}

TEST_CASE("Release: suite gpubundle, each index's sha256 and size, never expires", "[package-repo]") {
  std::vector<package_repo::IndexFile> idx = {{"main/binary-amd64/Packages", "Package: a\n"},
                                              {"main/binary-amd64/Packages.gz", std::string("\x1f\x8b gz", 5)}};
  std::string rel = package_repo::apt_release(idx, {"amd64"}, 1796151600);
  CHECK(rel.find("Suite: gpubundle\nCodename: gpubundle\n") != std::string::npos);
  CHECK(rel.find("Date: Tue, 01 Dec 2026 19:00:00 UTC\n") != std::string::npos);
  CHECK(rel.find("Architectures: amd64\nComponents: main\n") != std::string::npos);
  CHECK(rel.find(" " + sha256_hex("Package: a\n") + "               11 main/binary-amd64/Packages\n") != std::string::npos);
  CHECK(rel.find(" " + sha256_hex(idx[1].bytes) + "                5 main/binary-amd64/Packages.gz\n") != std::string::npos);
  CHECK(rel.find("Valid-Until") == std::string::npos);
  CHECK(package_repo::apt_release(idx, {"amd64"}, 1796151600) == rel);  // deterministic
  CHECK(package_repo::rfc2822_utc(0) == "Thu, 01 Jan 1970 00:00:00 UTC");
}

TEST_CASE("lock: packageRepo round trip, the repository image typed by its component", "[package-repo][lock]") {
  Lock l;
  l.generator = "gpubundle test";
  l.recipe_spec = "{}";
  l.driver = {"conventional", "580.105.08", "580", "auto", false};
  l.platforms = {"linux/amd64"};
  const std::string key = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ0test\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n";
  l.package_repo = LockPackageRepo{"apt", "0123456789ABCDEF0123456789ABCDEF01234567", key};
  record_built(l, {BuiltKind::PackageRepo, "localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab",
                   sha256_digest("m"), "linux/amd64"});
  REQUIRE(l.images.size() == 1);
  CHECK(l.images[0].components == std::vector<std::string>{k_package_repo_component});
  auto back = parse_lock(lock_to_json(l), "t.lock.json");
  INFO((back ? std::string() : back.error().message));
  REQUIRE(back.ok());
  CHECK(back->images[0].built == BuiltKind::PackageRepo);
  REQUIRE(back->package_repo);
  CHECK(back->package_repo->public_key == key);
  CHECK(back->package_repo->fingerprint == l.package_repo->fingerprint);
  CHECK(lock_to_json(*back) == lock_to_json(l));

  // Whatever lands in the kit's ConfigMap is checked on the way in.
  auto with = [&](LockPackageRepo p) {
    Lock x = l;
    x.package_repo = p;
    return parse_lock(lock_to_json(x), "t.lock.json");
  };
  CHECK_THAT(with({"yum", l.package_repo->fingerprint, key}).error().message, Catch::Contains("packageRepo.format"));
  CHECK_THAT(with({"apt", "0123", key}).error().message, Catch::Contains("packageRepo.fingerprint"));
  CHECK_THAT(with({"apt", l.package_repo->fingerprint, "trusted=yes\n"}).error().message, Catch::Contains("packageRepo.publicKey"));
  CHECK_FALSE(with({"apt", l.package_repo->fingerprint, std::string(key).insert(40, "\x1b[2J")}).ok());
  CHECK(with({"rpm-md", l.package_repo->fingerprint, key}).ok());
}
