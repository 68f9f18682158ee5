// signing/openpgp.hpp against the real gpg and gpgv.
#include <catch2/catch.hpp>

#include "common/files.hpp"
#include "common/process.hpp"
#include "fixtures.hpp"
#include "signing/openpgp.hpp"

using namespace gb;
using namespace gb::signing;
using gbtest::TempDir;

namespace {

// One generated key for the whole file: generation is the slow part.
struct Keys {
  TempDir dir;
  openpgp::SigningKey a = openpgp::SigningKey::generate(dir / "a.asc", "test a <a@test>").value_or_throw();
  openpgp::SigningKey b = openpgp::SigningKey::generate(dir / "b.asc", "test b <b@test>").value_or_throw();
  fs::path pub_a = dir / "a.pub.asc";
  fs::path pub_b = dir / "b.pub.asc";
  Keys() {
    write_atomic(pub_a, a.public_armored()).value_or_throw();
    write_atomic(pub_b, b.public_armored()).value_or_throw();
  }
};
Keys& keys() {
  static Keys k;
  return k;
}

}  // namespace

TEST_CASE("clearsigned text verifies against its key only, and only the signed part comes back", "[openpgp]") {
  auto& k = keys();
  std::string text = "Origin: test\nSuite: stable\nSHA256:\n abc 1 main/x\n";
  std::string signed_doc = k.a.clearsign(text).value_or_throw();
  auto back = openpgp::verify_clearsigned(k.pub_a, signed_doc, "InRelease").value_or_throw();
  CHECK(back.substr(0, text.size() - 1) == text.substr(0, text.size() - 1));

  auto other = openpgp::verify_clearsigned(k.pub_b, signed_doc, "http://x/InRelease");
  REQUIRE_FALSE(other);
  CHECK_THAT(other.error().message, Catch::Contains("http://x/InRelease") && Catch::Contains("signature check failed"));

  std::string tampered = signed_doc;
  tampered.replace(tampered.find("stable"), 6, "evilly");
  CHECK_FALSE(openpgp::verify_clearsigned(k.pub_a, tampered, "InRelease"));

  // Unsigned text before or after the message is refused, not skipped.
  CHECK_FALSE(openpgp::verify_clearsigned(k.pub_a, "Suite: evil\n" + signed_doc, "InRelease"));
  CHECK_FALSE(openpgp::verify_clearsigned(k.pub_a, signed_doc + "Suite: evil\n", "InRelease"));
  CHECK_FALSE(openpgp::verify_clearsigned(k.pub_a, text, "InRelease"));
}

TEST_CASE("detached signatures, armoured and binary, over exact bytes", "[openpgp]") {
  auto& k = keys();
  std::string data = "<repomd/>\n";
  for (bool armor : {true, false}) {
    std::string sig = k.b.detach_sign(data, armor).value_or_throw();
    CHECK(openpgp::verify_detached(k.pub_b, data, sig, "repomd.xml"));
    CHECK_FALSE(openpgp::verify_detached(k.pub_b, data + " ", sig, "repomd.xml"));
    CHECK_FALSE(openpgp::verify_detached(k.pub_a, data, sig, "repomd.xml"));
  }
  // A binary keyring works as well as an armoured one.
  TempDir t;
  auto r = run_process({"gpg", "--homedir", t.path().string(), "--batch", "--dearmor", "--output", (t / "b.gpg").string(),
                        k.pub_b.string()}).value_or_throw();
  REQUIRE(r.status == 0);
  CHECK(openpgp::verify_detached(t / "b.gpg", data, k.b.detach_sign(data, false).value_or_throw(), "repomd.xml"));
}

TEST_CASE("signing keys: reloaded with the same fingerprint; bad key files are input errors", "[openpgp]") {
  auto& k = keys();
  CHECK(k.a.fingerprint().size() == 40);
  CHECK(k.a.fingerprint() != k.b.fingerprint());
  auto again = openpgp::SigningKey::load(k.dir / "a.asc").value_or_throw();
  CHECK(again.fingerprint() == k.a.fingerprint());
  CHECK(fs::status(k.dir / "a.asc").permissions() == (fs::perms::owner_read | fs::perms::owner_write));

  auto exists = openpgp::SigningKey::generate(k.dir / "a.asc", "x <x@x>");
  REQUIRE_FALSE(exists);
  CHECK(exists.error().kind == ErrorKind::Input);
  auto pub_only = openpgp::SigningKey::load(k.pub_a);
  REQUIRE_FALSE(pub_only);
  CHECK_THAT(pub_only.error().message, Catch::Contains("a.pub.asc"));
  auto no_ring = openpgp::verify_detached(k.dir / "none.gpg", "x", "y", "repomd.xml");
  REQUIRE_FALSE(no_ring);
  CHECK_THAT(no_ring.error().message, Catch::Contains("none.gpg"));
}
