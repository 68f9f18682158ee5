#pragma once
// OpenPGP for package repositories, through Debian's own tools: gpgv checks
// signatures (apt's InRelease, Release.gpg, rpm-md's repomd.xml.asc) and gpg
// makes the site repository's signatures. OpenPGP is never parsed here.
//
// A keyring is a file of one or more public keys, binary or ASCII-armoured
// (armoured ones are dearmoured into a temporary file for gpgv). Every call
// runs in its own temporary GNUPGHOME, so the user's keyrings are never read
// or written and calls can run at once.
//
// `runner` starts gpg and gpgv; null: system_runner() (common/process.hpp).

#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace gb {
class CommandRunner;
}

namespace gb::signing::openpgp {

// Checks a clearsigned document (apt's InRelease) against `keyring` and
// returns the signed text only: whatever surrounds the signed part is never
// trusted. `what` names the document in errors ("http://host/dists/jammy/InRelease").
Result<std::string> verify_clearsigned(const std::filesystem::path& keyring, std::string_view document,
                                       const std::string& what, CommandRunner* runner = nullptr);

// Checks a detached signature (binary or armoured) over `data`.
Result<void> verify_detached(const std::filesystem::path& keyring, std::string_view data, std::string_view signature,
                             const std::string& what, CommandRunner* runner = nullptr);

// A repository signing key: an ASCII-armoured OpenPGP secret key without a
// passphrase, as `generate` writes it (mode 0600). Loading imports it once
// into a private GNUPGHOME that lives as long as the object, and so must
// `runner`, which signs with it.
class SigningKey {
public:
  static Result<SigningKey> load(const std::filesystem::path& secret_key_file, CommandRunner* runner = nullptr);
  // Writes a new Ed25519 signing key for `user_id` to `secret_key_file`
  // (refused if the file exists) and returns it loaded.
  static Result<SigningKey> generate(const std::filesystem::path& secret_key_file, const std::string& user_id,
                                     CommandRunner* runner = nullptr);

  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  const std::string& fingerprint() const;     // 40 upper-case hex digits
  const std::string& public_armored() const;  // the public key, for the kit
  Result<std::string> clearsign(std::string_view text) const;               // InRelease
  Result<std::string> detach_sign(std::string_view data, bool armor) const;  // Release.gpg, repomd.xml.asc

private:
  SigningKey();
  struct Impl;
  Impl* m_impl = nullptr;
};

}  // namespace gb::signing::openpgp
