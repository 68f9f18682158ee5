#pragma once
// Signing keys.
//
// On disk (written by `gpubundle keys generate --out NAME`):
//   NAME.key  PEM PKCS#8 private key, mode 0600. "-----BEGIN PRIVATE KEY-----",
//             or "-----BEGIN ENCRYPTED PRIVATE KEY-----" (PBES2, PBKDF2 with
//             HMAC-SHA256, AES-256-CBC) when a passphrase is given.
//   NAME.pub  PEM SubjectPublicKeyInfo, "-----BEGIN PUBLIC KEY-----".
// Both are what `openssl genpkey` / `openssl pkey -pubout` read and write.
//
// Key id: lower-case hex sha256 of the public key's DER SubjectPublicKeyInfo,
// i.e. `openssl pkey -pubin -in NAME.pub -outform DER | sha256sum`. It names
// the key in signature files and in `bundle inspect`.
//
// A keyring is a folder of trusted NAME.pub files (other files are ignored).
// Only keys the operator hands over explicitly (--pubkey, --keyring) are ever
// trusted; a key carried inside signed data never is.
//
// Ed25519 and ECDSA P-256 sign bundles, locks and install kits. RSA and
// ECDSA P-384 keys are accepted only for kernel module signing
// (signing/module_sign.hpp), because that is what kernels verify.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::signing {

enum class KeyType { Ed25519, EcdsaP256, EcdsaP384, Rsa };

// "ed25519", "ecdsa-p256", "ecdsa-p384", "rsa"
std::string_view key_type_name(KeyType type);
std::optional<KeyType> parse_key_type(std::string_view name);

class PublicKey;

// Overwrites a string that held key material or a passphrase, then clears it.
void wipe_secret(std::string& secret);

// A passphrase held only in memory and wiped when destroyed.
class Passphrase {
public:
  Passphrase() = default;
  explicit Passphrase(std::string text) : m_text(std::move(text)), m_set(true) {}
  Passphrase(const Passphrase&) = default;
  Passphrase& operator=(const Passphrase&) = default;
  ~Passphrase();
  bool set() const { return m_set; }
  const std::string& text() const { return m_text; }

  // From the environment variable `var` (its value, verbatim).
  static Result<Passphrase> from_env(const std::string& var);
  // From the first line of `path` (the trailing newline is not part of it).
  static Result<Passphrase> from_file(const std::filesystem::path& path);

private:
  std::string m_text;
  bool m_set = false;
};

class PrivateKey {
public:
  // A fresh key: Ed25519 or EcdsaP256 only.
  static Result<PrivateKey> generate(KeyType type);
  // Reads a PEM private key (PKCS#8, encrypted or not; traditional RSA/EC PEM
  // too). `source` names the file in errors. Errors, each one line:
  // encrypted without a passphrase, wrong passphrase, malformed PEM, a public
  // key or certificate where the private key is due.
  static Result<PrivateKey> parse(std::string_view pem, const std::string& source, const Passphrase& passphrase = {});
  static Result<PrivateKey> load(const std::filesystem::path& path, const Passphrase& passphrase = {});

  KeyType type() const;
  std::string id() const;
  PublicKey public_key() const;
  // PEM PKCS#8, encrypted with AES-256-CBC when `passphrase` is set.
  Result<std::string> to_pem(const Passphrase& passphrase = {}) const;

  struct Impl;
  explicit PrivateKey(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}
  const Impl& impl() const { return *m_impl; }

private:
  std::shared_ptr<const Impl> m_impl;
};

class PublicKey {
public:
  // Reads a PEM public key ("BEGIN PUBLIC KEY"). A private key given here is
  // refused, so that a secret is never mistaken for a trust anchor.
  static Result<PublicKey> parse(std::string_view pem, const std::string& source);
  static Result<PublicKey> load(const std::filesystem::path& path);

  KeyType type() const;
  std::string id() const;
  std::string to_pem() const;
  std::string der() const;

  struct Impl;
  explicit PublicKey(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}
  const Impl& impl() const { return *m_impl; }

private:
  std::shared_ptr<const Impl> m_impl;
};

// The set of keys a verifier trusts, by key id.
class Keyring {
public:
  Keyring() = default;
  // Every *.pub file in `dir`; an empty folder or an unreadable key is an error.
  static Result<Keyring> load_dir(const std::filesystem::path& dir);
  static Keyring of(PublicKey key);

  void add(PublicKey key);
  const PublicKey* find(std::string_view key_id) const;
  bool empty() const { return m_keys.empty(); }
  std::size_t size() const { return m_keys.size(); }
  std::vector<std::string> ids() const;

private:
  std::map<std::string, PublicKey, std::less<>> m_keys;
};

}  // namespace gb::signing
