#pragma once
// Kernel module signing, in-process, byte-compatible with the kernel's own
// scripts/sign-file (Linux 6.1, OpenSSL 3 build).
//
// A signed module is laid out as:
//   <module ELF bytes>
//   <CMS SignedData, DER>         detached over the module ELF bytes; digest
//                                 sha256 (or sha384/sha512); no signed
//                                 attributes; no certificates; the signer is
//                                 named by issuer + serial number. The same
//                                 flags as sign-file: CMS_sign(NOCERTS|PARTIAL|
//                                 BINARY|DETACHED|STREAM), CMS_add1_signer(
//                                 NOCERTS|BINARY|NOSMIMECAP|NOATTR), CMS_final(
//                                 NOCERTS|BINARY).
//   struct module_signature       12 bytes: algo 0, hash 0, id_type 2
//                                 (PKEY_ID_PKCS7), signer_len 0, key_id_len 0,
//                                 3 pad bytes 0, sig_len (big-endian u32, the
//                                 CMS length)
//   "~Module signature appended~\n"
// For RSA keys (PKCS#1 v1.5, deterministic) the output is byte-identical to
// `sign-file sha256 key cert module.ko`. ECDSA signatures are randomised.
//
// Before signing, an existing signature (or a stack of them, as sign-file
// leaves when run twice) is removed, so re-signing gives exactly one
// signature. Debug info is removed with binutils `strip --strip-debug` run on
// a temporary copy, as distributions do before signing; callers can turn that
// off (ModuleSignOptions::strip_debug) or name another strip binary.
//
// The signing key must come with its certificate (PEM or DER); the key must
// match it. The key is used only here, on the build machine: it never goes
// into an image, a bundle or metadata. Metadata records the certificate's
// fingerprint and subject (ModuleSigner accessors) and may carry the DER
// certificate for `mokutil --import`.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "signing/keys.hpp"

namespace gb {
class CommandRunner;
}

namespace gb::signing {

inline constexpr std::string_view kModuleSignatureMagic = "~Module signature appended~\n";

class ModuleSigner {
public:
  // Errors: no certificate ("a key without its certificate"), unreadable or
  // encrypted key without passphrase, Ed25519 keys (kernels verify RSA and
  // ECDSA only), "key K does not match certificate C".
  static Result<ModuleSigner> load(const std::filesystem::path& key, const std::filesystem::path& cert,
                                   const Passphrase& passphrase = {});

  KeyType key_type() const;
  // sha256 hex of the certificate's DER: the "signer fingerprint".
  const std::string& fingerprint() const;
  // RFC 2253 subject, e.g. "CN=Site A module key,O=Example".
  const std::string& subject() const;
  // The subject's CN; what `modinfo -F signer` prints for a self-signed cert.
  const std::string& common_name() const;
  // The certificate in DER, for `mokutil --import`.
  const std::string& certificate_der() const;

  struct Impl;
  explicit ModuleSigner(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}
  const Impl& impl() const { return *m_impl; }

private:
  std::shared_ptr<const Impl> m_impl;
};

struct ModuleSignOptions {
  std::string hash = "sha256";  // sha256, sha384 or sha512
  bool strip_debug = true;
  std::string strip_program = "strip";  // found on PATH unless a path is given
  CommandRunner* runner = nullptr;       // starts strip; null: system_runner()
};

struct AppendedSignature {
  std::size_t module_size = 0;  // bytes before the CMS blob
  std::size_t cms_size = 0;
  std::uint8_t id_type = 0;  // 2 = PKCS#7/CMS
};

// The outermost appended signature, or nullopt for an unsigned module.
// A damaged trailer is an error. `source` names the module in messages.
Result<std::optional<AppendedSignature>> find_module_signature(std::string_view module, const std::string& source);
// The module without any appended signature.
Result<std::string_view> unsigned_module(std::string_view module, const std::string& source);

// Checks the outermost appended signature of `module` against the certificate
// `cert_path` (PEM or DER): the CMS must name that certificate (issuer and
// serial) and its signature must cover the module bytes before it. This is
// the kernel's check minus the keyring trust decision. Failures are op_errors.
Result<void> verify_module_signature(std::string_view module, const std::string& source,
                                     const std::filesystem::path& cert_path);

struct ModuleSignReport {
  bool had_signature = false;
  std::size_t unsigned_size = 0;  // after stripping
  std::size_t signed_size = 0;
};

// Reads `in`, removes an old signature, strips debug info (per options), signs
// and writes `out` atomically (out may be in). Refuses non-ELF input (for
// example a .ko.xz: sign before compressing).
Result<ModuleSignReport> sign_module_file(const ModuleSigner& signer, const std::filesystem::path& in,
                                          const std::filesystem::path& out, const ModuleSignOptions& options = {});

}  // namespace gb::signing
