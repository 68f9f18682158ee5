// The rpm-md code around createrepo_c (write_repo) and rpmkeys/rpm
// (verify_package_signature), with a FakeRunner: the argv each gets and what
// is decided from their output. tests/integration/packages_rpm.sh runs the
// real programs.
#include <catch2/catch.hpp>

#include "fake_runner.hpp"
#include "fixtures.hpp"
#include "packages/rpm_md.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"

using namespace gb;
using namespace gb::signing;
using namespace gb::packages;
using namespace gbtest;
namespace fs = std::filesystem;

namespace {

Fetched fetched(const TempDir& t, const std::string& name, const std::string& version, const std::string& arch) {
  Fetched f;
  f.package.name = name;
  f.package.version = version;
  f.package.arch = arch;
  f.package.location = "Packages/" + name + "-" + version + "." + arch + ".rpm";
  f.package.size = 3;
  f.file = t / (name + ".rpm");
  gbtest::spit(f.file, "rpm");
  return f;
}

// gpg as SigningKey drives it; createrepo_c answered by `createrepo`.
FakeRunner repo_tools(std::function<Result<ProcessResult>(const Call&)> createrepo) {
  return FakeRunner([createrepo](const Call& c) -> Result<ProcessResult> {
    if (c.argv[0] == "createrepo_c") return createrepo(c);
    return gbtest::fake_gpg(c);
  });
}

}  // namespace

TEST_CASE("createrepo_c: gz metadata without sqlite under fixed names; SOURCE_DATE_EPOCH pins revision and times", "[rpm][runner]") {
  TempDir t;
  gbtest::spit(t / "site.asc", "secret");
  std::vector<std::string> packages_seen;
  auto tools = repo_tools([&](const Call& c) -> Result<ProcessResult> {
    for (const auto& e : fs::directory_iterator(fs::path(c.argv.back()) / "Packages")) packages_seen.push_back(e.path().filename().string());
    gbtest::spit(fs::path(c.argv.back()) / "repodata/repomd.xml", "<repomd/>\n");
    return exited(0);
  });
  auto key = openpgp::SigningKey::load(t / "site.asc", &tools).value_or_throw();
  std::vector<Fetched> files = {fetched(t, "kernel-devel", "6.1.0-1.el9", "x86_64")};
  const std::vector<std::string> fixed = {"createrepo_c", "--quiet", "--no-database", "--simple-md-filenames",
                                          "--general-compress-type=gz", "--checksum=sha256"};
  {
    gbtest::ScopedEnv no_epoch("SOURCE_DATE_EPOCH", nullptr);
    auto out = rpm_md::write_repo(files, key, t / "repo", &tools).value_or_throw();
    auto argv = fixed;
    argv.push_back((t / "repo").string());
    REQUIRE(tools.of("createrepo_c").size() == 1);
    CHECK(tools.of("createrepo_c")[0].argv == argv);
    CHECK(packages_seen == std::vector<std::string>{"kernel-devel-6.1.0-1.el9.x86_64.rpm"});
    // repomd.xml as createrepo_c wrote it is what gets signed, armoured, and what names the repository.
    CHECK(tools.calls.back().has("--detach-sign"));
    CHECK(tools.calls.back().has("--armor"));
    CHECK(gbtest::slurp(t / "repo/repodata/repomd.xml.asc") == "SIGNED(<repomd/>\n)");
    CHECK(gbtest::slurp(t / "repo/RPM-GPG-KEY-gpubundle") == gbtest::k_fake_public);
    CHECK(out.release_sha256 == sha256_hex("<repomd/>\n"));
    CHECK(out.packages == 1);
    CHECK(out.bytes == 3);
  }
  {
    gbtest::ScopedEnv epoch("SOURCE_DATE_EPOCH", "1700000000");
    rpm_md::write_repo(files, key, t / "pinned", &tools).value_or_throw();
    auto argv = fixed;
    argv.insert(argv.end(), {"--revision=1700000000", "--set-timestamp-to-revision", (t / "pinned").string()});
    CHECK(tools.of("createrepo_c").back().argv == argv);
  }
}

TEST_CASE("createrepo_c's failure is one line with its exit status and stderr; nothing is signed", "[rpm][runner]") {
  TempDir t;
  gbtest::spit(t / "site.asc", "secret");
  auto tools = repo_tools([](const Call&) -> Result<ProcessResult> {
    return exited(1, "", "Critical: Cannot read Packages/x.rpm\nC_CREATEREPOLIB: Warning: more\n");
  });
  auto key = openpgp::SigningKey::load(t / "site.asc", &tools).value_or_throw();
  auto r = rpm_md::write_repo({}, key, t / "repo", &tools);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::StartsWith((t / "repo").string() + ": createrepo_c failed (exit 1): Critical: Cannot read Packages/x.rpm"));
  CHECK(r.error().message.find('\n') == std::string::npos);
  CHECK_FALSE(tools.calls.back().has("--detach-sign"));
  CHECK_FALSE(fs::exists(t / "repo/repodata/repomd.xml.asc"));

  // Not installed: the runner's error, as it is.
  auto missing = repo_tools([](const Call&) -> Result<ProcessResult> { return op_error("createrepo_c: cannot run it: No such file"); });
  auto key2 = openpgp::SigningKey::load(t / "site.asc", &missing).value_or_throw();
  CHECK(rpm_md::write_repo({}, key2, t / "repo2", &missing).error().message == "createrepo_c: cannot run it: No such file");
}

namespace {

const std::string k_key_fpr = "99A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3";

const std::string k_checksig_ok =
    "x.rpm:\n"
    "    Header V4 RSA/SHA256 Signature, key ID fd431d51: OK\n"
    "    Header SHA256 digest: OK\n"
    "    Header SHA1 digest: OK\n"
    "    Payload SHA256 digest: OK\n"
    "    V4 RSA/SHA256 Signature, key ID fd431d51: OK\n"
    "    MD5 digest: OK\n";

const std::string k_unsigned =
    "x.rpm:\n"
    "    Header SHA256 digest: OK\n"
    "    Header SHA1 digest: OK\n"
    "    Payload SHA256 digest: OK\n"
    "    MD5 digest: OK\n";

// gpg, rpmkeys and rpm as verify_package_signature drives them.
struct RpmTools {
  std::string listed = "pub:-:4096:1:5C6D7E8F90A1B2C3:1600000000:::-:::scSC::::::23::0:\nfpr:::::::::" + k_key_fpr + ":\n";
  ProcessResult checksig = exited(0, k_checksig_ok);
  std::string header = "kernel-devel 0:6.1.0-1.el9 x86_64";
  std::vector<std::string> imported;  // the key files rpmkeys --import read

  FakeRunner runner() {
    return FakeRunner([this](const Call& c) -> Result<ProcessResult> {
      if (c.argv[0] == "gpg" && c.has("--list-keys")) return exited(0, listed);
      if (c.argv[0] == "gpg" && c.has("--export")) return exited(0, "ARMORED " + c.argv.back());
      if (c.argv[0] == "gpg") return exited(0);
      if (c.argv[0] == "rpmkeys" && c.has("--import")) {
        imported.push_back(gbtest::slurp(c.after("--import")));
        return exited(0);
      }
      if (c.argv[0] == "rpmkeys" && c.has("--checksig")) return checksig;
      if (c.argv[0] == "rpm") return exited(0, header);
      return exited(127, "", "unexpected");
    });
  }
};

}  // namespace

TEST_CASE("an rpm's signature: the keyring split by gpg into rpmkeys' private database, every tool in the C locale", "[rpm][runner]") {
  TempDir t;
  auto file = fetched(t, "kernel-devel", "6.1.0-1.el9", "x86_64");
  RpmTools tools;
  auto fake = tools.runner();
  REQUIRE(rpm_md::verify_package_signature(t / "vendor.gpg", file, &fake));
  const Call& import = fake.calls.at(0);
  fs::path home = import.after("--homedir");
  CHECK(import.argv == std::vector<std::string>{"gpg", "--homedir", home.string(), "--batch", "--no-tty", "--quiet", "--import",
                                                (t / "vendor.gpg").string()});
  CHECK(fake.calls.at(2).argv.back() == k_key_fpr);  // exported by fingerprint
  CHECK(tools.imported == std::vector<std::string>{"ARMORED " + k_key_fpr});
  auto rpmkeys = fake.of("rpmkeys");
  REQUIRE(rpmkeys.size() == 2);
  fs::path db = rpmkeys[0].after("--dbpath");
  CHECK(db.parent_path() == home.parent_path());  // one private scratch folder
  CHECK(rpmkeys[1].argv == std::vector<std::string>{"rpmkeys", "--dbpath", db.string(), "--checksig", "-v", file.file.string()});
  auto rpm = fake.of("rpm");
  REQUIRE(rpm.size() == 1);
  CHECK(rpm[0].after("--dbpath") == db.string());
  CHECK(rpm[0].has("--nosignature"));
  CHECK(rpm[0].after("--qf") == "%{NAME} %{EPOCHNUM}:%{VERSION}-%{RELEASE} %{ARCH}");
  CHECK(rpm[0].argv.back() == file.file.string());
  for (const auto& c : fake.calls) CHECK(c.options.env.at("LC_ALL") == "C");
  CHECK_FALSE(fs::exists(home.parent_path()));  // the scratch folder goes
}

TEST_CASE("rpmkeys --checksig: every signature line OK and at least one; digests intact; exit 0", "[rpm][runner]") {
  TempDir t;
  auto file = fetched(t, "kernel-devel", "6.1.0-1.el9", "x86_64");
  const fs::path ring = t / "vendor.gpg";
  auto check = [&](ProcessResult checksig) {
    RpmTools tools;
    tools.checksig = std::move(checksig);
    auto fake = tools.runner();
    return rpm_md::verify_package_signature(ring, file, &fake);
  };
  CHECK(check(exited(0, k_checksig_ok)));

  // rpmkeys exits 0 for an unsigned rpm whose digests match.
  auto unsigned_rpm = check(exited(0, k_unsigned));
  REQUIRE_FALSE(unsigned_rpm);
  CHECK_THAT(unsigned_rpm.error().message, Catch::StartsWith(file.file.string() + ": not signed by a key in " + ring.string() + " (rpmkeys: "));

  // Signed by a key not in the keyring.
  std::string nokey = k_checksig_ok;
  nokey.replace(nokey.find("fd431d51: OK"), 12, "fd431d51: NOKEY");
  auto other = check(exited(1, nokey));
  REQUIRE_FALSE(other);
  CHECK(other.error().message == file.file.string() + ": Header V4 RSA/SHA256 Signature, key ID fd431d51: NOKEY (checked against " +
                                     ring.string() + ")");

  // Bytes changed after signing: said as such.
  std::string bad = k_checksig_ok;
  bad.replace(bad.find("Payload SHA256 digest: OK"), 25, "Payload SHA256 digest: BAD (Expected 01 != 02)");
  auto changed = check(exited(1, bad));
  REQUIRE_FALSE(changed);
  CHECK(changed.error().message ==
        file.file.string() + ": its contents do not match its signed digests (Payload SHA256 digest: BAD (Expected 01 != 02))");

  // Every line OK but rpmkeys failed anyway.
  auto failed = check(exited(1, k_checksig_ok, "error: rpmdb: damaged\n"));
  REQUIRE_FALSE(failed);
  CHECK_THAT(failed.error().message, Catch::StartsWith(file.file.string() + ": rpmkeys --checksig failed (exit 1): "));
}

TEST_CASE("the signed header must be the package the index named: name, [epoch:]version-release, arch", "[rpm][runner]") {
  TempDir t;
  auto check = [&](const Fetched& file, std::string header) {
    RpmTools tools;
    tools.header = std::move(header);
    auto fake = tools.runner();
    return rpm_md::verify_package_signature(t / "vendor.gpg", file, &fake);
  };
  auto devel = fetched(t, "kernel-devel", "6.1.0-1.el9", "x86_64");
  CHECK(check(devel, "kernel-devel 0:6.1.0-1.el9 x86_64"));
  auto epoch = fetched(t, "nvidia-driver", "3:580.95.05-1.el9", "x86_64");
  CHECK(check(epoch, "nvidia-driver 3:580.95.05-1.el9 x86_64"));
  CHECK_FALSE(check(epoch, "nvidia-driver 0:580.95.05-1.el9 x86_64"));
  CHECK_FALSE(check(devel, "kernel-devel 0:6.1.0-2.el9 x86_64"));
  CHECK_FALSE(check(devel, "kernel-devel 0:6.1.0-1.el9 aarch64"));
  auto renamed = check(devel, "kernel-core 0:6.1.0-1.el9 x86_64");
  REQUIRE_FALSE(renamed);
  CHECK(renamed.error().message ==
        devel.file.string() + ": its signed header says 'kernel-core 0:6.1.0-1.el9 x86_64', the index 'kernel-devel 0:6.1.0-1.el9 x86_64'");
}

TEST_CASE("a keyring without a key, and gpg's failure, stop before rpmkeys", "[rpm][runner]") {
  TempDir t;
  auto file = fetched(t, "kernel-devel", "6.1.0-1.el9", "x86_64");
  RpmTools empty;
  empty.listed = "";
  auto fake = empty.runner();
  auto none = rpm_md::verify_package_signature(t / "vendor.gpg", file, &fake);
  REQUIRE_FALSE(none);
  CHECK(none.error().kind == ErrorKind::Input);
  CHECK(none.error().message == (t / "vendor.gpg").string() + ": no OpenPGP public key");
  CHECK(fake.of("rpmkeys").empty());

  FakeRunner broken([](const Call&) -> Result<ProcessResult> { return exited(2, "", "gpg: no valid OpenPGP data found.\n"); });
  auto r = rpm_md::verify_package_signature(t / "vendor.gpg", file, &broken);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == file.file.string() + ": gpg failed (exit 2): gpg: no valid OpenPGP data found.");
  CHECK(broken.calls.size() == 1);
}
