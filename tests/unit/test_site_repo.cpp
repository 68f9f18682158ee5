// The site package repository: the apt index and Release the writer makes
// (packages/site_repo.hpp) and the lock's packageRepo. In memory; the signed
// repository read by real apt is tests/integration/package_repo.sh. The
// repository image is built into a temporary store.

#include <archive.h>
#include <archive_entry.h>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "bundle_fixture.hpp"
#include "common/archive_raii.hpp"
#include "fixtures.hpp"
#include "packages/site_repo.hpp"
#include "mirror/store.hpp"
#include "node-images/repo_image.hpp"
#include "recipes/lock.hpp"
#include "signing/digest.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::node_images;
using namespace gb::recipes;
using namespace gb::signing;

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
  auto amd64 = packages::apt_packages(in, "amd64");
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

  auto arm64 = packages::apt_packages(in, "arm64");
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
  auto r = packages::apt_packages({a, b}, "amd64");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK_THAT(r.error().message, Catch::Contains("linux-kbuild-6.1_6.1.158-1_amd64.deb") && Catch::Contains("other.example"));

  auto no_file = a;
  no_file.entry = "Package: x\nVersion: 1";
  CHECK_FALSE(packages::apt_packages({no_file}, "amd64").ok());

  auto dotted = a;
  dotted.location = "pool/..";
  auto d = packages::apt_packages({dotted}, "amd64");
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(d.error().message, Catch::Contains("not a plain file name"));
}

TEST_CASE("Release: suite gpubundle, each index's sha256 and size, never expires", "[package-repo]") {
  std::vector<packages::IndexFile> idx = {{"main/binary-amd64/Packages", "Package: a\n"},
                                              {"main/binary-amd64/Packages.gz", std::string("\x1f\x8b gz", 5)}};
  std::string rel = packages::apt_release(idx, {"amd64"}, 1796151600);
  CHECK(rel.find("Suite: gpubundle\nCodename: gpubundle\n") != std::string::npos);
  CHECK(rel.find("Date: Tue, 01 Dec 2026 19:00:00 UTC\n") != std::string::npos);
  CHECK(rel.find("Architectures: amd64\nComponents: main\n") != std::string::npos);
  CHECK(rel.find(" " + sha256_hex("Package: a\n") + "               11 main/binary-amd64/Packages\n") != std::string::npos);
  CHECK(rel.find(" " + sha256_hex(idx[1].bytes) + "                5 main/binary-amd64/Packages.gz\n") != std::string::npos);
  CHECK(rel.find("Valid-Until") == std::string::npos);
  CHECK(packages::apt_release(idx, {"amd64"}, 1796151600) == rel);  // deterministic
  CHECK(packages::rfc2822_utc(0) == "Thu, 01 Jan 1970 00:00:00 UTC");
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

namespace {

struct LayerEntryInfo {
  std::string path;
  unsigned mode = 0;
  std::string data;
};

std::vector<LayerEntryInfo> read_gzip_tar(const std::filesystem::path& p) {
  std::vector<LayerEntryInfo> out;
  gb::detail::ArchiveReader a(archive_read_new());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  REQUIRE(archive_read_open_filename(a.get(), p.c_str(), 65536) == ARCHIVE_OK);
  archive_entry* e;
  while (archive_read_next_header(a.get(), &e) == ARCHIVE_OK) {
    LayerEntryInfo i{archive_entry_pathname(e), static_cast<unsigned>(archive_entry_perm(e)), ""};
    if (!i.path.empty() && i.path.back() == '/') i.path.pop_back();  // folders
    char buf[4096];
    la_ssize_t n;
    while ((n = archive_read_data(a.get(), buf, sizeof buf)) > 0) i.data.append(buf, static_cast<size_t>(n));
    out.push_back(std::move(i));
  }
  return out;
}

// A repository folder and the store of tests/unit/bundle_fixture.hpp, whose
// Docker schema2 device-plugin image stands in for the server image.
struct RepoImageFixture {
  gbtest::TempDir dir;
  std::filesystem::path repo = dir / "repo";
  RepoImageOptions options;
  RepoImageFixture() {
    std::filesystem::create_directories(repo / "dists/gpubundle/main/binary-amd64");
    std::filesystem::create_directories(repo / "pool");
    gbtest::spit(repo / "dists/gpubundle/InRelease", "signed\n");
    gbtest::spit(repo / "dists/gpubundle/main/binary-amd64/Packages", "Package: a\n");
    gbtest::spit(repo / "pool/a_1_amd64.deb", "deb bytes");
    options.base = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0";
    options.os_tag = "ubuntu22.04";
    options.fingerprint = std::string(40, 'A');
    options.release_sha256 = std::string(64, 'b');
  }
  BuiltRepoImage build(const std::string& store_name) {
    Store store = Store::open(dir / store_name, StoreAccess::Exclusive).value_or_throw();
    gbtest::fill_bundle_store(store, 1000, 2000, 100);
    options.work = dir / (store_name + "-work");
    return build_repo_image(store, repo, options).value_or_throw();
  }
};

}  // namespace

TEST_CASE("the repository image: server image + one layer of the tree, httpd as nobody, deterministic", "[package-repo][image]") {
  RepoImageFixture f;
  BuiltRepoImage img = f.build("store");
  CHECK(img.ref == "localhost/gpubundle/package-repo:ubuntu22.04-bbbbbbbbbbbb");
  CHECK(img.built().kind == BuiltKind::PackageRepo);
  CHECK(img.platform == "linux/amd64");

  Store store = Store::open(f.dir / "store", StoreAccess::Read).value_or_throw();
  auto stored = store.find_image(img.ref);
  REQUIRE(stored);
  CHECK(stored->digest == img.digest);
  auto man = nlohmann::json::parse(store.read_blob(img.digest).value_or_throw());
  CHECK(man["mediaType"] == "application/vnd.oci.image.manifest.v1+json");
  REQUIRE(man["layers"].size() == 2);  // the base's one, rewritten as OCI, and ours
  CHECK(man["layers"][0]["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip");
  auto cfg = nlohmann::json::parse(store.read_blob(man["config"]["digest"].get<std::string>()).value_or_throw());
  CHECK(cfg["config"]["Entrypoint"] == nlohmann::json({"httpd", "-f", "-v", "-p", "8080", "-h", "/srv/gpubundle-repo"}));
  CHECK_FALSE(cfg["config"].contains("Cmd"));
  CHECK(cfg["config"]["User"] == "65534:65534");
  CHECK(cfg["config"]["Env"] == nlohmann::json({"B=1"}));  // the server image's own config stays
  CHECK(cfg["config"]["Labels"]["io.gpubundle.package-repo.fingerprint"] == std::string(40, 'A'));
  CHECK(cfg["rootfs"]["diff_ids"].size() == 1);

  auto entries = read_gzip_tar(store.blob_path(man["layers"][1]["digest"].get<std::string>()));
  std::map<std::string, LayerEntryInfo> by_path;
  for (const auto& e : entries) by_path[e.path] = e;
  REQUIRE(by_path.count("srv/gpubundle-repo/pool/a_1_amd64.deb"));
  CHECK(by_path["srv/gpubundle-repo/pool/a_1_amd64.deb"].data == "deb bytes");
  CHECK(by_path["srv/gpubundle-repo/pool/a_1_amd64.deb"].mode == 0644);
  CHECK(by_path["srv/gpubundle-repo/dists/gpubundle/InRelease"].data == "signed\n");
  CHECK(by_path["srv/gpubundle-repo/dists"].mode == 0755);
  for (const auto& e : entries) CHECK(e.path.rfind("srv", 0) == 0);

  // Another store, the same inputs: the same image.
  CHECK(f.build("store2").digest == img.digest);
  // The server image must be in the store.
  f.options.base = "docker.io/library/busybox:1.36.1";
  Store s3 = Store::open(f.dir / "store3", StoreAccess::Exclusive).value_or_throw();
  auto missing = build_repo_image(s3, f.repo, f.options);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("docker.io/library/busybox:1.36.1"));
}
