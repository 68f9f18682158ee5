#pragma once
// Detached signatures for bundle manifests, locks and install kits.
//
// Signature file format (version 1): one JSON object, keys sorted, followed
// by a newline:
//   {"algorithm":"ed25519","format":"gpubundle-signature","keyId":"<64 hex>",
//    "signature":"<base64>","version":1}
// - algorithm: "ed25519" (pure Ed25519 over the data, RFC 8032; deterministic,
//   so the same key and data give the same file) or "ecdsa-p256" (ECDSA P-256
//   over SHA-256 of the data, DER-encoded (r,s); randomised).
// - keyId: the signer's key id (signing/keys.hpp), used only to pick the key
//   out of the verifier's keyring. The file never carries a key, and the
//   verifier trusts only keys it was given explicitly.
// - signature: standard base64 (with padding) of the raw signature bytes.
// The signed message is the data itself, so the signature also checks with
// plain OpenSSL: `openssl pkeyutl -verify -pubin -inkey K.pub -rawin -in DATA
// -sigfile SIG.bin` (Ed25519) or `openssl dgst -sha256 -verify K.pub
// -signature SIG.bin DATA` (ECDSA).
//
// Every verification failure, including a damaged signature file, is an
// op_error (exit 1): it is the data that failed, not the command line.

#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "signing/keys.hpp"

namespace gb::signing {

struct Signature {
  std::string key_id;
  KeyType algorithm = KeyType::Ed25519;
  std::string value;  // raw signature bytes
};

// Returns the signature file text for `data`.
Result<std::string> sign_detached(const PrivateKey& key, std::string_view data);
// Checks `signature` (the file text) over `data` against the trusted keys;
// returns the signer's key id.
Result<std::string> verify_detached(const Keyring& trusted, std::string_view data, std::string_view signature);

// The same for a file's bytes. The file is read whole: sign manifests, locks
// and kit indexes that in turn list the sha256 of the large files.
Result<std::string> sign_file(const PrivateKey& key, const std::filesystem::path& data);
Result<std::string> verify_file(const Keyring& trusted, const std::filesystem::path& data,
                                const std::filesystem::path& signature);

Result<Signature> parse_signature(std::string_view text);
std::string signature_to_json(const Signature& sig);

std::string base64_encode(std::string_view bytes);
Result<std::string> base64_decode(std::string_view text);

}  // namespace gb::signing
