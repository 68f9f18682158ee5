// signing/openpgp.hpp's decisions around gpg and gpgv, with a FakeRunner: the
// argv each gets, how gpgv's status lines are read, what SigningKey takes from
// gpg's listing. test_openpgp.cpp runs the real programs.
#include <catch2/catch.hpp>

#include "fake_runner.hpp"
#include "fixtures.hpp"
#include "signing/openpgp.hpp"

using namespace gb;
using namespace gb::signing;
using namespace gbtest;
namespace fs = std::filesystem;

namespace {

const std::string k_fpr = "AAAABBBBCCCCDDDDEEEEFFFF0000111122223333";

// gpgv --status-fd's VALIDSIG: fields 2..11, the hash algorithm 10th (index 9).
std::string validsig(int hash) {
  return "[GNUPG:] VALIDSIG " + k_fpr + " 2024-01-01 1704067200 0 4 0 22 " + std::to_string(hash) + " 00 " + k_fpr + "\n";
}
const std::string k_goodsig = "[GNUPG:] GOODSIG EEEEFFFF00001111 test <t@test>\n";

// A keyring file that is not armoured: used as it is, no gpg --dearmor.
fs::path binary_keyring(const TempDir& t) {
  gbtest::spit(t / "ring.gpg", std::string("\x98\x33\x04", 3) + "key bytes");
  return t / "ring.gpg";
}

FakeRunner gpgv_says(int status, std::string out, std::string err = "") {
  return FakeRunner([=](const Call&) -> Result<ProcessResult> { return exited(status, out, err); });
}

}  // namespace

TEST_CASE("gpgv runs in a fresh private home on the given keyring only, status on fd 1, C locale", "[openpgp][runner]") {
  TempDir t;
  fs::path ring = binary_keyring(t);
  std::string seen_data, seen_sig;
  bool home_was_there = false;
  FakeRunner gpgv([&](const Call& c) -> Result<ProcessResult> {
    home_was_there = fs::is_directory(c.after("--homedir"));
    seen_sig = gbtest::slurp(c.argv[c.argv.size() - 2]);
    seen_data = gbtest::slurp(c.argv.back());
    return exited(0, k_goodsig + validsig(10));
  });
  REQUIRE(openpgp::verify_detached(ring, "<repomd/>", "SIG", "repomd.xml", &gpgv));
  REQUIRE(gpgv.calls.size() == 1);
  const Call& c = gpgv.calls[0];
  fs::path home = c.after("--homedir");
  CHECK(c.argv[0] == "gpgv");
  CHECK(c.argv[1] == "--homedir");
  CHECK(home.parent_path() == fs::temp_directory_path());
  CHECK(home.filename().string().rfind("gpubundle-gpg-", 0) == 0);
  CHECK(home_was_there);
  CHECK_FALSE(fs::exists(home));  // removed after the check
  CHECK(c.after("--status-fd") == "1");
  CHECK(c.after("--keyring") == fs::absolute(ring).string());
  CHECK(std::count(c.argv.begin(), c.argv.end(), "--keyring") == 1);
  CHECK_FALSE(c.has("--batch"));  // gpgv refuses it
  CHECK(seen_sig == "SIG");
  CHECK(seen_data == "<repomd/>");
  CHECK(c.options.env.at("LC_ALL") == "C");
}

TEST_CASE("gpgv's status lines decide: one VALIDSIG with an accepted digest, no bad news, exit 0", "[openpgp][runner]") {
  TempDir t;
  fs::path ring = binary_keyring(t);
  auto check = [&](int status, const std::string& out, const std::string& err = "") {
    auto gpgv = gpgv_says(status, out, err);
    return openpgp::verify_detached(ring, "data", "sig", "http://x/repomd.xml", &gpgv);
  };
  CHECK(check(0, k_goodsig + validsig(8)));   // SHA256
  CHECK(check(0, k_goodsig + validsig(10)));  // SHA512

  // No VALIDSIG: a GOODSIG alone (an expired or otherwise unusable key) is not enough.
  auto no_valid = check(0, k_goodsig);
  REQUIRE_FALSE(no_valid);
  CHECK(no_valid.error().message == "http://x/repomd.xml: signature check failed against " + ring.string());
  CHECK_FALSE(check(0, ""));
  // A VALIDSIG cut short is not one.
  CHECK_FALSE(check(0, "[GNUPG:] VALIDSIG " + k_fpr + " 2024-01-01 1704067200\n"));
  // Status lines come from fd 1 only: stderr cannot forge one.
  CHECK_FALSE(check(0, "", validsig(8)));
  // Not a status line without its "[GNUPG:]" field.
  CHECK_FALSE(check(0, "VALIDSIG " + k_fpr + " 2024-01-01 1704067200 0 4 0 22 8 00\n"));
  // Any bad news wins over a VALIDSIG (two signatures, one bad).
  for (std::string bad : {"BADSIG", "ERRSIG", "EXPKEYSIG", "REVKEYSIG"})
    CHECK_FALSE(check(0, k_goodsig + validsig(8) + "[GNUPG:] " + bad + " EEEEFFFF00001111 x\n"));
  // gpgv's exit status counts too.
  CHECK_FALSE(check(1, k_goodsig + validsig(8)));

  // Made by a key not in the keyring: gpgv reports ERRSIG/NO_PUBKEY; its reason line is said.
  auto other_key = check(2, "[GNUPG:] ERRSIG EEEEFFFF00001111 22 8 00 1704067200 9 -\n[GNUPG:] NO_PUBKEY EEEEFFFF00001111\n",
                         "gpgv: Signature made Mon Jan  1 00:00:00 2024 UTC\ngpgv:                using EDDSA key EEEEFFFF00001111\n"
                         "gpgv: Can't check signature: No public key\n");
  REQUIRE_FALSE(other_key);
  CHECK(other_key.error().message ==
        "http://x/repomd.xml: signature check failed against " + ring.string() + ": gpgv: Can't check signature: No public key");

  // MD5, SHA-1 and RIPEMD-160 are refused even when the signature is good.
  for (int weak : {1, 2, 3}) {
    auto r = check(0, k_goodsig + validsig(weak));
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "http://x/repomd.xml: signed with a weak digest (OpenPGP hash algorithm " +
                                   std::to_string(weak) + "); refused");
  }
}

TEST_CASE("clearsigned: only the text gpgv writes to --output comes back", "[openpgp][runner]") {
  TempDir t;
  fs::path ring = binary_keyring(t);
  const std::string doc = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nSuite: stable\n-----BEGIN PGP SIGNATURE-----\n"
                          "xyz\n-----END PGP SIGNATURE-----\n";
  std::string seen_input;
  FakeRunner gpgv([&](const Call& c) -> Result<ProcessResult> {
    seen_input = gbtest::slurp(c.argv.back());
    gbtest::spit(c.after("--output"), "Suite: stable\n");
    return exited(0, k_goodsig + validsig(10));
  });
  auto text = openpgp::verify_clearsigned(ring, doc, "InRelease", &gpgv);
  REQUIRE(text);
  CHECK(*text == "Suite: stable\n");
  CHECK(seen_input == doc);
  CHECK(gpgv.calls.at(0).after("--status-fd") == "1");

  // Good status but nothing written: refused, not an empty index.
  auto silent = gpgv_says(0, k_goodsig + validsig(10));
  auto none = openpgp::verify_clearsigned(ring, doc, "InRelease", &silent);
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "InRelease: gpgv wrote no signed text");

  // Text around the signed message is refused before gpgv runs.
  FakeRunner unused;
  CHECK_FALSE(openpgp::verify_clearsigned(ring, "Suite: evil\n" + doc, "InRelease", &unused));
  CHECK_FALSE(openpgp::verify_clearsigned(ring, doc + "Suite: evil\n", "InRelease", &unused));
  CHECK_FALSE(openpgp::verify_clearsigned(ring, "Suite: stable\n", "InRelease", &unused));
  CHECK(unused.calls.empty());
}

TEST_CASE("an armoured keyring is dearmoured by gpg in the private home; an unusable one is an input error", "[openpgp][runner]") {
  TempDir t;
  gbtest::spit(t / "ring.asc", "-----BEGIN PGP PUBLIC KEY BLOCK-----\nabc\n-----END PGP PUBLIC KEY BLOCK-----\n");
  FakeRunner tools([](const Call& c) -> Result<ProcessResult> {
    if (c.argv[0] == "gpg") return exited(0);
    return exited(0, k_goodsig + validsig(8));
  });
  REQUIRE(openpgp::verify_detached(t / "ring.asc", "d", "s", "Release", &tools));
  REQUIRE(tools.calls.size() == 2);
  const Call& gpg = tools.calls[0];
  std::string home = gpg.after("--homedir");
  CHECK(gpg.argv == std::vector<std::string>{"gpg", "--homedir", home, "--batch", "--no-tty", "--dearmor", "--output",
                                             home + "/keyring.gpg", fs::absolute(t / "ring.asc").string()});
  CHECK(tools.calls[1].after("--homedir") == home);
  CHECK(tools.calls[1].after("--keyring") == home + "/keyring.gpg");

  auto refusing = gpgv_says(2, "", "gpg: no valid OpenPGP data found.\n");
  auto bad = openpgp::verify_detached(t / "ring.asc", "d", "s", "Release", &refusing);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().kind == ErrorKind::Input);
  CHECK(bad.error().message == (t / "ring.asc").string() + ": not an OpenPGP keyring: gpg: no valid OpenPGP data found.");
  CHECK(refusing.calls.size() == 1);  // gpgv never ran

  gbtest::spit(t / "empty.gpg", "");
  FakeRunner unused;
  auto empty = openpgp::verify_detached(t / "empty.gpg", "d", "s", "Release", &unused);
  REQUIRE_FALSE(empty);
  CHECK(empty.error().message == (t / "empty.gpg").string() + ": empty keyring");
  CHECK(unused.calls.empty());
}

TEST_CASE("a signing key: gpg's one secret key and its primary fingerprint; signing argv; the agent stopped", "[openpgp][runner]") {
  TempDir t;
  gbtest::spit(t / "site.asc", "secret");
  FakeRunner gpg([](const Call& c) -> Result<ProcessResult> {
    // gpg makes private-keys-v1.d when it imports a secret key (and starts an agent).
    if (c.has("--import")) fs::create_directories(fs::path(c.after("--homedir")) / "private-keys-v1.d");
    return gbtest::fake_gpg(c);
  });
  fs::path home;
  {
    auto key = openpgp::SigningKey::load(t / "site.asc", &gpg).value_or_throw();
    CHECK(key.fingerprint() == gbtest::k_fake_fingerprint);
    CHECK(key.public_armored() == gbtest::k_fake_public);
    REQUIRE(gpg.calls.size() == 3);
    home = gpg.calls[0].after("--homedir");
    CHECK(gpg.calls[0].argv == std::vector<std::string>{"gpg", "--homedir", home.string(), "--batch", "--no-tty", "--import",
                                                       fs::absolute(t / "site.asc").string()});
    CHECK(gpg.calls[2].argv == std::vector<std::string>{"gpg", "--homedir", home.string(), "--batch", "--no-tty", "--armor",
                                                       "--export", gbtest::k_fake_fingerprint});

    {
      gbtest::ScopedEnv no_epoch("SOURCE_DATE_EPOCH", nullptr);
      CHECK(key.detach_sign("<repomd/>", true).value_or_throw() == "SIGNED(<repomd/>)");
      const Call& s = gpg.calls.back();
      CHECK(s.after("--homedir") == home.string());
      CHECK(s.after("--local-user") == gbtest::k_fake_fingerprint);
      CHECK(s.after("--digest-algo") == "SHA512");
      CHECK(s.has("--armor"));
      CHECK_FALSE(s.has("--faked-system-time"));
      CHECK(key.detach_sign("x", false).value_or_throw() == "SIGNED(x)");
      CHECK_FALSE(gpg.calls.back().has("--armor"));
      CHECK(key.clearsign("Suite: x\n").value_or_throw() == "SIGNED(Suite: x\n)");
      CHECK(gpg.calls.back().has("--clearsign"));
    }
    // SOURCE_DATE_EPOCH dates the signature, never before the key was made.
    {
      gbtest::ScopedEnv later("SOURCE_DATE_EPOCH", "1800000000");
      (void)key.detach_sign("x", true).value_or_throw();
      CHECK(gpg.calls.back().after("--faked-system-time") == "1800000000!");
    }
    {
      gbtest::ScopedEnv earlier("SOURCE_DATE_EPOCH", "1600000000");
      (void)key.detach_sign("x", true).value_or_throw();
      CHECK(gpg.calls.back().after("--faked-system-time") == std::to_string(gbtest::k_fake_key_created) + "!");
    }
    CHECK(gpg.of("gpgconf").empty());
  }
  // The key's home goes with it, its agent stopped first.
  REQUIRE(gpg.of("gpgconf").size() == 1);
  CHECK(gpg.of("gpgconf")[0].argv == std::vector<std::string>{"gpgconf", "--homedir", home.string(), "--kill", "gpg-agent"});
  CHECK_FALSE(fs::exists(home));
}

TEST_CASE("a signing key file must hold exactly one secret key gpg can import; gpg's failures are said", "[openpgp][runner]") {
  TempDir t;
  gbtest::spit(t / "site.asc", "secret");
  // fake_gpg, but the call with `flag` in argv answers `answer`.
  auto except = [](std::string flag, ProcessResult answer) {
    return FakeRunner([=](const Call& c) -> Result<ProcessResult> {
      if (c.has(flag)) return answer;
      return gbtest::fake_gpg(c);
    });
  };

  auto two = except("--list-secret-keys", exited(0, "sec:u:255:22:A:1:::u:::scESC:::+:::ed25519:::0:\nfpr:::::::::" + k_fpr +
                                                        ":\nsec:u:255:22:B:1:::u:::scESC:::+:::ed25519:::0:\nfpr:::::::::" +
                                                        gbtest::k_fake_fingerprint + ":\n"));
  auto r = openpgp::SigningKey::load(t / "site.asc", &two);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message == (t / "site.asc").string() + ": must hold exactly one OpenPGP secret key, holds 2");

  auto public_only = except("--list-secret-keys", exited(0, ""));
  CHECK_THAT(openpgp::SigningKey::load(t / "site.asc", &public_only).error().message, Catch::EndsWith("holds 0"));

  // The line that says why, not gpg's summary after it.
  auto garbage = except("--import", exited(2, "", "gpg: no valid OpenPGP data found.\ngpg: Total number processed: 0\n"));
  r = openpgp::SigningKey::load(t / "site.asc", &garbage);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message == (t / "site.asc").string() + ": not an OpenPGP secret key: gpg: no valid OpenPGP data found.");

  auto no_export = except("--export", exited(0, ""));
  CHECK(openpgp::SigningKey::load(t / "site.asc", &no_export).error().message ==
        (t / "site.asc").string() + ": cannot export its public key");

  auto no_sign = except("--clearsign", exited(2, "", "gpg: signing failed: No secret key\n"));
  auto key = openpgp::SigningKey::load(t / "site.asc", &no_sign).value_or_throw();
  CHECK(key.clearsign("x").error().message == "gpg --clearsign failed: gpg: signing failed: No secret key");

  FakeRunner unused;
  CHECK(openpgp::SigningKey::load(t / "none.asc", &unused).error().message == (t / "none.asc").string() + ": no such key file");
  CHECK(unused.calls.empty());
}

TEST_CASE("generating a signing key: Ed25519 with no passphrase, written 0600, then loaded; a failure writes nothing", "[openpgp][runner]") {
  TempDir t;
  FakeRunner gpg([](const Call& c) -> Result<ProcessResult> {
    if (c.has("--quick-generate-key")) return exited(0);
    if (c.has("--export-secret-keys")) return exited(0, "-----BEGIN PGP PRIVATE KEY BLOCK-----\nfake\n");
    return gbtest::fake_gpg(c);
  });
  auto key = openpgp::SigningKey::generate(t / "keys/site.asc", "site <s@x>", &gpg).value_or_throw();
  CHECK(key.fingerprint() == gbtest::k_fake_fingerprint);
  const Call& made = gpg.calls.at(0);
  CHECK(std::vector<std::string>(made.argv.begin() + 5, made.argv.end()) ==
        std::vector<std::string>{"--passphrase", "", "--quick-generate-key", "site <s@x>", "ed25519", "sign", "never"});
  CHECK(gbtest::slurp(t / "keys/site.asc") == "-----BEGIN PGP PRIVATE KEY BLOCK-----\nfake\n");
  CHECK(fs::status(t / "keys/site.asc").permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(gpg.calls.at(2).after("--import") == fs::absolute(t / "keys/site.asc").string());

  FakeRunner failing([](const Call&) -> Result<ProcessResult> { return exited(2, "", "gpg: agent_genkey failed: No agent\n"); });
  auto r = openpgp::SigningKey::generate(t / "other.asc", "x <x@x>", &failing);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "gpg --quick-generate-key failed: gpg: agent_genkey failed: No agent");
  CHECK_FALSE(fs::exists(t / "other.asc"));
}
