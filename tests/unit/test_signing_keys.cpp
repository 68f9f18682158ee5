#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/files.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"
#include "signing/signature.hpp"

using namespace gb;
using namespace gb::signing;
namespace fs = std::filesystem;

namespace {

struct SigningTempDir {
  fs::path path;
  SigningTempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gb-signing-test.XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~SigningTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// DER of a PEM public key, decoded here without OpenSSL so that the key id is
// checked against an independent computation.
std::string pem_body_der(const std::string& pem) {
  std::string b64;
  std::istringstream in(pem);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("-----", 0) != 0) b64 += line;
  return base64_decode(b64).value();
}

const KeyType kDetachedTypes[] = {KeyType::Ed25519, KeyType::EcdsaP256};

}  // namespace

TEST_CASE("generated keys round-trip through PEM and keep their id", "[signing][keys]") {
  for (KeyType type : kDetachedTypes) {
    INFO(key_type_name(type));
    PrivateKey key = PrivateKey::generate(type).value();
    CHECK(key.type() == type);
    std::string pem = key.to_pem().value();
    CHECK(pem.rfind("-----BEGIN PRIVATE KEY-----", 0) == 0);
    PrivateKey again = PrivateKey::parse(pem, "k.key").value();
    CHECK(again.type() == type);
    CHECK(again.id() == key.id());

    std::string pub_pem = key.public_key().to_pem();
    CHECK(pub_pem.rfind("-----BEGIN PUBLIC KEY-----", 0) == 0);
    PublicKey pub = PublicKey::parse(pub_pem, "k.pub").value();
    CHECK(pub.type() == type);
    CHECK(pub.id() == key.id());
    // Key id = sha256 of the SubjectPublicKeyInfo DER.
    CHECK(pub.der() == pem_body_der(pub_pem));
    CHECK(key.id() == sha256_hex(pem_body_der(pub_pem)));
    CHECK(key.id().size() == 64);
  }
  CHECK(PrivateKey::generate(KeyType::Ed25519).value().id() != PrivateKey::generate(KeyType::Ed25519).value().id());
  CHECK_FALSE(PrivateKey::generate(KeyType::Rsa).ok());
}

TEST_CASE("encrypted private keys need the right passphrase", "[signing][keys]") {
  for (KeyType type : kDetachedTypes) {
    INFO(key_type_name(type));
    PrivateKey key = PrivateKey::generate(type).value();
    std::string pem = key.to_pem(Passphrase("correct horse")).value();
    CHECK(pem.rfind("-----BEGIN ENCRYPTED PRIVATE KEY-----", 0) == 0);
    CHECK(PrivateKey::parse(pem, "site.key", Passphrase("correct horse")).value().id() == key.id());

    auto wrong = PrivateKey::parse(pem, "site.key", Passphrase("battery staple"));
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.error().kind == ErrorKind::Input);
    CHECK(wrong.error().message == "site.key: wrong passphrase (cannot decrypt the private key)");

    auto none = PrivateKey::parse(pem, "site.key");
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().message.find("site.key is encrypted") == 0);
  }
}

TEST_CASE("malformed PEM and the wrong kind of key are refused clearly", "[signing][keys]") {
  std::string pem = PrivateKey::generate(KeyType::Ed25519).value().to_pem().value();

  auto garbage = PrivateKey::parse("hello\n", "a.key");
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().message == "a.key: not a PEM private key (no -----BEGIN line)");

  std::string damaged = pem;
  damaged[40] = damaged[40] == 'A' ? 'B' : 'A';  // a byte inside the base64 body
  damaged.replace(35, 8, "!!!!!!!!");
  auto bad = PrivateKey::parse(damaged, "b.key");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("b.key: malformed private key PEM") == 0);

  auto truncated = PrivateKey::parse(pem.substr(0, pem.size() / 2), "c.key");
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error().message.find("c.key: malformed private key PEM") == 0);

  auto ssh = PrivateKey::parse("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----\n", "id_ed25519");
  REQUIRE_FALSE(ssh.ok());
  CHECK(ssh.error().message.find("id_ed25519 is an OpenSSH key") == 0);

  std::string pub = PrivateKey::generate(KeyType::EcdsaP256).value().public_key().to_pem();
  auto swapped = PrivateKey::parse(pub, "site.pub");
  REQUIRE_FALSE(swapped.ok());
  CHECK(swapped.error().message == "site.pub holds a public key, but a private key is needed here");

  auto secret_as_trust = PublicKey::parse(pem, "site.key");
  REQUIRE_FALSE(secret_as_trust.ok());
  CHECK(secret_as_trust.error().message == "site.key holds a private key; give the public key (NAME.pub) instead");

  SigningTempDir dir;
  auto missing = PrivateKey::load(dir.path / "nope.key");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("nope.key") != std::string::npos);
}

TEST_CASE("passphrases come from a file's first line or an environment variable", "[signing][keys]") {
  SigningTempDir dir;
  write(dir.path / "pass", "s3cret phrase\nignored\n");
  CHECK(Passphrase::from_file(dir.path / "pass").value().text() == "s3cret phrase");
  write(dir.path / "empty", "\n");
  CHECK_FALSE(Passphrase::from_file(dir.path / "empty").ok());
  ::setenv("GB_TEST_SIGNING_PASS", "from env", 1);
  CHECK(Passphrase::from_env("GB_TEST_SIGNING_PASS").value().text() == "from env");
  ::unsetenv("GB_TEST_SIGNING_PASS");
  auto unset = Passphrase::from_env("GB_TEST_SIGNING_PASS");
  REQUIRE_FALSE(unset.ok());
  CHECK(unset.error().message == "passphrase variable GB_TEST_SIGNING_PASS is not set");
}

TEST_CASE("detached signatures verify, and fail on any change or another key", "[signing][signature]") {
  const std::string data = "{\"bundle\":\"manifest\",\"images\":42}\n";
  for (KeyType type : kDetachedTypes) {
    INFO(key_type_name(type));
    PrivateKey key = PrivateKey::generate(type).value();
    PrivateKey other = PrivateKey::generate(type).value();
    Keyring ring = Keyring::of(key.public_key());

    std::string sig = sign_detached(key, data).value();
    CHECK(verify_detached(ring, data, sig).value() == key.id());

    Signature parsed = parse_signature(sig).value();
    CHECK(parsed.key_id == key.id());
    CHECK(parsed.algorithm == type);
    if (type == KeyType::Ed25519) {
      CHECK(parsed.value.size() == 64);
      CHECK(sign_detached(key, data).value() == sig);  // deterministic
    }

    // Every single-bit flip of the data is caught (sampled positions).
    for (size_t pos : {size_t{0}, data.size() / 2, data.size() - 1}) {
      std::string flipped = data;
      flipped[pos] = static_cast<char>(flipped[pos] ^ 0x01);
      auto r = verify_detached(ring, flipped, sig);
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().kind == ErrorKind::Failed);
      CHECK(r.error().message == "signature: does not match the signed data (key " + key.id() + ")");
    }
    // A flipped bit in the signature bytes.
    Signature tampered = parsed;
    tampered.value[10] = static_cast<char>(tampered.value[10] ^ 0x80);
    CHECK_FALSE(verify_detached(ring, data, signature_to_json(tampered)).ok());

    // Signed by a key the verifier does not trust.
    auto foreign = verify_detached(ring, data, sign_detached(other, data).value());
    REQUIRE_FALSE(foreign.ok());
    CHECK(foreign.error().message ==
          "signature: made by key " + other.id() + ", which is not among the 1 trusted key(s)");

    // A forged keyId naming the trusted key but signed by another key.
    Signature forged = parse_signature(sign_detached(other, data).value()).value();
    forged.key_id = key.id();
    CHECK_FALSE(verify_detached(ring, data, signature_to_json(forged)).ok());

    // Both keys trusted: the signature picks its key by id.
    Keyring both = ring;
    both.add(other.public_key());
    CHECK(verify_detached(both, data, sign_detached(other, data).value()).value() == other.id());
  }
}

TEST_CASE("damaged signature files are verification failures", "[signing][signature]") {
  PrivateKey key = PrivateKey::generate(KeyType::Ed25519).value();
  Keyring ring = Keyring::of(key.public_key());
  std::string sig = sign_detached(key, "x").value();
  CHECK(sig.back() == '\n');
  CHECK(sig.find("\"format\":\"gpubundle-signature\"") != std::string::npos);
  CHECK(sig.find("\"version\":1") != std::string::npos);

  auto expect_fail = [&](const std::string& text, const std::string& message) {
    auto r = verify_detached(ring, "x", text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::Failed);
    CHECK(r.error().message == message);
  };
  expect_fail("", "signature: not a gpubundle signature file (not JSON)");
  expect_fail(sig.substr(0, sig.size() / 2), "signature: not a gpubundle signature file (not JSON)");
  std::string v2 = sig;
  v2.replace(v2.find("\"version\":1"), 11, "\"version\":2");
  expect_fail(v2, "signature: unsupported version (this gpubundle reads version 1)");
  std::string alg = sig;
  alg.replace(alg.find("ed25519"), 7, "rsa-pss");
  expect_fail(alg, "signature: unknown algorithm \"rsa-pss\"");
  std::string b64 = sig;
  b64.insert(b64.find("\"signature\":\"") + 13, "*");
  expect_fail(b64, "signature: field signature: base64: length is not a multiple of 4");
  // The algorithm field must agree with the trusted key's type.
  Signature s = parse_signature(sig).value();
  s.algorithm = KeyType::EcdsaP256;
  expect_fail(signature_to_json(s), "signature: algorithm ecdsa-p256 does not match key " + key.id() + " (ed25519)");
}

TEST_CASE("base64 follows RFC 4648 and rejects non-canonical text", "[signing][signature]") {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (auto [plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded).value() == plain);
  }
  CHECK_FALSE(base64_decode("Zg=").ok());
  CHECK_FALSE(base64_decode("Zh==").ok());  // non-zero trailing bits
  CHECK_FALSE(base64_decode("Z===").ok());
  CHECK_FALSE(base64_decode("Zm9v\n").ok());
  std::mt19937 rng(7);
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    CHECK(base64_decode(base64_encode(bytes)).value() == bytes);
    bytes += static_cast<char>(rng() & 0xff);
  }
}

TEST_CASE("files sign and verify; keyrings load from a folder of .pub files", "[signing][signature]") {
  SigningTempDir dir;
  PrivateKey a = PrivateKey::generate(KeyType::Ed25519).value();
  PrivateKey b = PrivateKey::generate(KeyType::EcdsaP256).value();
  fs::create_directory(dir.path / "ring");
  write(dir.path / "ring" / "a.pub", a.public_key().to_pem());
  write(dir.path / "ring" / "b.pub", b.public_key().to_pem());
  write(dir.path / "ring" / "README", "not a key");
  Keyring ring = Keyring::load_dir(dir.path / "ring").value();
  CHECK(ring.size() == 2);
  CHECK(ring.find(a.id()) != nullptr);
  CHECK(ring.find(b.id()) != nullptr);

  write(dir.path / "lock.json", "{\"images\":[]}\n");
  write(dir.path / "lock.json.sig", sign_file(b, dir.path / "lock.json").value());
  CHECK(verify_file(ring, dir.path / "lock.json", dir.path / "lock.json.sig").value() == b.id());
  write(dir.path / "lock.json", "{\"images\":[1]}\n");
  auto r = verify_file(ring, dir.path / "lock.json", dir.path / "lock.json.sig");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("lock.json.sig: signature: does not match") != std::string::npos);

  fs::create_directory(dir.path / "empty");
  auto empty = Keyring::load_dir(dir.path / "empty");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message.find("holds no *.pub keys") != std::string::npos);
  write(dir.path / "ring" / "c.pub", a.to_pem().value());  // a secret where a trust anchor is due
  auto mixed = Keyring::load_dir(dir.path / "ring");
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.error().message.find("c.pub holds a private key") != std::string::npos);
}
