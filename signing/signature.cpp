#include "signing/signature.hpp"

#include <nlohmann/json.hpp>
#include <openssl/err.h>

#include "common/files.hpp"
#include "signing/digest.hpp"
#include "signing/openssl_detail.hpp"

namespace gb::signing {

namespace {

constexpr std::string_view kFormat = "gpubundle-signature";
constexpr int kVersion = 1;
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool signs_detached(KeyType t) { return t == KeyType::Ed25519 || t == KeyType::EcdsaP256; }

// Ed25519 signs the message itself; ECDSA signs its SHA-256.
const EVP_MD* digest_for(KeyType t) { return t == KeyType::Ed25519 ? nullptr : EVP_sha256(); }

Result<std::string> sign_raw(const PrivateKey& key, std::string_view data) {
  if (!signs_detached(key.type()))
    return input_error("a " + std::string(key_type_name(key.type())) +
                       " key cannot sign bundles, locks or kits; use ed25519 or ecdsa-p256");
  ERR_clear_error();
  detail::MdCtx ctx(EVP_MD_CTX_new());
  auto* data_p = reinterpret_cast<const unsigned char*>(data.data());
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, digest_for(key.type()), nullptr, detail::native(key)) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, data_p, data.size()) != 1)
    return op_error("OpenSSL: cannot sign: " + detail::last_error());
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, data_p, data.size()) != 1)
    return op_error("OpenSSL: cannot sign: " + detail::last_error());
  sig.resize(len);
  return sig;
}

bool verify_raw(const PublicKey& key, std::string_view data, std::string_view signature) {
  if (!signs_detached(key.type())) return false;
  detail::MdCtx ctx(EVP_MD_CTX_new());
  bool ok = ctx &&
            EVP_DigestVerifyInit(ctx.get(), nullptr, digest_for(key.type()), nullptr, detail::native(key)) == 1 &&
            EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                             reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  ERR_clear_error();
  return ok;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto b = [&](size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 2 < bytes.size(); i += 3) {
    unsigned v = b(i) << 16 | b(i + 1) << 8 | b(i + 2);
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(v >> s) & 63];
  }
  if (size_t rest = bytes.size() - i) {  // 1 or 2 bytes: 2 or 3 digits, then '=' padding
    unsigned v = b(i) << 16 | (rest == 2 ? b(i + 1) << 8 : 0);
    for (int s : {18, 12, 6}) out += s == 6 && rest == 1 ? '=' : kAlphabet[(v >> s) & 63];
    out += '=';
  }
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return input_error("base64: length is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    unsigned v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      unsigned d = 0;
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
      } else {
        if (pad) return input_error("base64: data after padding");
        size_t pos = kAlphabet.find(c);
        if (pos == std::string_view::npos) return input_error("base64: invalid character");
        d = static_cast<unsigned>(pos);
      }
      v = v << 6 | d;
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  // Reject non-canonical encodings so that one signature has one spelling.
  if (base64_encode(out) != text) return input_error("base64: not canonical");
  return out;
}

std::string signature_to_json(const Signature& sig) {
  nlohmann::json j = {
      {"format", kFormat},
      {"version", kVersion},
      {"algorithm", key_type_name(sig.algorithm)},
      {"keyId", sig.key_id},
      {"signature", base64_encode(sig.value)},
  };
  return j.dump() + "\n";
}

Result<Signature> parse_signature(std::string_view text) {
  auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return op_error("signature: not a gpubundle signature file (not JSON)");
  auto str = [&](const char* k) -> const std::string* {
    auto it = j.find(k);
    return it != j.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  const std::string* format = str("format");
  if (!format || *format != kFormat) return op_error("signature: not a gpubundle signature file (format)");
  auto ver = j.find("version");
  if (ver == j.end() || !ver->is_number_integer() || ver->get<int>() != kVersion)
    return op_error("signature: unsupported version (this gpubundle reads version 1)");
  const std::string* alg = str("algorithm");
  auto type = alg ? parse_key_type(*alg) : std::nullopt;
  if (!type || !signs_detached(*type))
    return op_error("signature: unknown algorithm " + (alg ? "\"" + *alg + "\"" : std::string("(missing)")));
  const std::string* id = str("keyId");
  if (!id || !is_sha256_hex(*id)) return op_error("signature: keyId is not 64 lower-case hex digits");
  const std::string* b64 = str("signature");
  if (!b64) return op_error("signature: field signature is missing");
  auto raw = base64_decode(*b64);
  if (!raw) return op_error("signature: field signature: " + raw.error().message);
  return Signature{*id, *type, std::move(raw).value()};
}

Result<std::string> sign_detached(const PrivateKey& key, std::string_view data) {
  auto raw = sign_raw(key, data);
  if (!raw) return raw.error();
  return signature_to_json(Signature{key.id(), key.type(), std::move(raw).value()});
}

Result<std::string> verify_detached(const Keyring& trusted, std::string_view data, std::string_view signature) {
  auto sig = parse_signature(signature);
  if (!sig) return sig.error();
  const PublicKey* key = trusted.find(sig->key_id);
  if (!key)
    return op_error("signature: made by key " + sig->key_id + ", which is not among the " +
                    std::to_string(trusted.size()) + " trusted key(s)");
  if (key->type() != sig->algorithm)
    return op_error("signature: algorithm " + std::string(key_type_name(sig->algorithm)) + " does not match key " +
                    sig->key_id + " (" + std::string(key_type_name(key->type())) + ")");
  if (!verify_raw(*key, data, sig->value))
    return op_error("signature: does not match the signed data (key " + sig->key_id + ")");
  return sig->key_id;
}

Result<std::string> sign_file(const PrivateKey& key, const std::filesystem::path& data) {
  auto bytes = read_file(data);
  if (!bytes) return bytes.error();
  return sign_detached(key, bytes.value());
}

Result<std::string> verify_file(const Keyring& trusted, const std::filesystem::path& data,
                                const std::filesystem::path& signature) {
  auto bytes = read_file(data);
  if (!bytes) return bytes.error();
  auto sig = read_file(signature);
  if (!sig) return sig.error();
  auto id = verify_detached(trusted, bytes.value(), sig.value());
  if (!id) return op_error(signature.string() + ": " + id.error().message);
  return id;
}

}  // namespace gb::signing
