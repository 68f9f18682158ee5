#include "signing/keys.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <sys/stat.h>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "signing/digest.hpp"
#include "signing/openssl_detail.hpp"

namespace gb::signing {

struct PrivateKey::Impl {
  detail::Pkey key;
  KeyType type;
};
struct PublicKey::Impl {
  detail::Pkey key;
  KeyType type;
};

namespace detail {

Bio mem_reader(std::string_view data) { return Bio(BIO_new_mem_buf(data.data(), static_cast<int>(data.size()))); }
Bio mem_writer() { return Bio(BIO_new(BIO_s_mem())); }

std::string bio_contents(BIO* bio) {
  char* p = nullptr;
  long n = BIO_get_mem_data(bio, &p);
  return n > 0 ? std::string(p, static_cast<size_t>(n)) : std::string();
}

std::string last_error() {
  unsigned long code = 0, last = 0;
  while ((code = ERR_get_error()) != 0) last = code;
  if (last == 0) return "";
  const char* reason = ERR_reason_error_string(last);
  return reason ? reason : "error " + std::to_string(ERR_GET_REASON(last));
}

std::optional<KeyType> key_type_of(const EVP_PKEY* key) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_ED25519: return KeyType::Ed25519;
    case EVP_PKEY_RSA: return KeyType::Rsa;
    case EVP_PKEY_EC: {
      char group[64] = {};
      size_t len = 0;
      if (EVP_PKEY_get_group_name(key, group, sizeof group, &len) != 1) return std::nullopt;
      std::string_view g(group, len);
      if (g == "prime256v1" || g == "P-256") return KeyType::EcdsaP256;
      if (g == "secp384r1" || g == "P-384") return KeyType::EcdsaP384;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

// The DER SubjectPublicKeyInfo.
std::string public_der(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  int len = i2d_PUBKEY(key, &der);
  if (len <= 0) throw Error(ErrorKind::Failed, "OpenSSL: cannot encode a public key");
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return out;
}

std::string key_id_of(EVP_PKEY* key) { return sha256_hex(public_der(key)); }

EVP_PKEY* native(const PrivateKey& key) { return key.impl().key.get(); }
EVP_PKEY* native(const PublicKey& key) { return key.impl().key.get(); }

}  // namespace detail

namespace {

// The labels of the PEM blocks in `text`, in order ("PRIVATE KEY", ...).
std::vector<std::string> pem_labels(std::string_view text) {
  std::vector<std::string> labels;
  static constexpr std::string_view begin = "-----BEGIN ";
  size_t pos = 0;
  while ((pos = text.find(begin, pos)) != std::string_view::npos) {
    pos += begin.size();
    size_t end = text.find("-----", pos);
    if (end == std::string_view::npos) break;
    labels.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return labels;
}

std::string describe_label(const std::string& label) {
  if (label == "PUBLIC KEY" || label == "RSA PUBLIC KEY") return "a public key";
  if (label == "CERTIFICATE" || label == "TRUSTED CERTIFICATE") return "a certificate";
  if (label == "CERTIFICATE REQUEST") return "a certificate request";
  return "a \"" + label + "\" block";
}

struct PassphraseUse {
  const Passphrase* passphrase;
  bool asked = false;
};

int passphrase_cb(char* buf, int size, int /*rwflag*/, void* u) {
  auto* use = static_cast<PassphraseUse*>(u);
  use->asked = true;
  if (!use->passphrase || !use->passphrase->set()) return -1;
  const std::string& p = use->passphrase->text();
  if (p.size() > static_cast<size_t>(size)) return -1;
  std::memcpy(buf, p.data(), p.size());
  return static_cast<int>(p.size());
}

// A signing key others can read is a key others can sign with.
void warn_if_exposed(const std::filesystem::path& private_key) {
  struct stat st {};
  if (::stat(private_key.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    log_warn(private_key.string() + ": private key is readable by others (mode " + mode + "); restrict it: chmod 600 " +
              private_key.string());
  }
}

}  // namespace

std::string_view key_type_name(KeyType type) {
  switch (type) {
    case KeyType::Ed25519: return "ed25519";
    case KeyType::EcdsaP256: return "ecdsa-p256";
    case KeyType::EcdsaP384: return "ecdsa-p384";
    case KeyType::Rsa: return "rsa";
  }
  return "unknown";
}

std::optional<KeyType> parse_key_type(std::string_view name) {
  for (KeyType t : {KeyType::Ed25519, KeyType::EcdsaP256, KeyType::EcdsaP384, KeyType::Rsa})
    if (key_type_name(t) == name) return t;
  return std::nullopt;
}

void wipe_secret(std::string& secret) {
  OPENSSL_cleanse(secret.data(), secret.size());
  secret.clear();
}

Passphrase::~Passphrase() { OPENSSL_cleanse(m_text.data(), m_text.size()); }

Result<Passphrase> Passphrase::from_env(const std::string& var) {
  const char* v = std::getenv(var.c_str());
  if (!v) return input_error("passphrase variable " + var + " is not set");
  if (!*v) return input_error("passphrase variable " + var + " is empty");
  return Passphrase(v);
}

Result<Passphrase> Passphrase::from_file(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  std::string& t = text.value();
  size_t nl = t.find_first_of("\r\n");
  Passphrase p(t.substr(0, nl));
  OPENSSL_cleanse(t.data(), t.size());
  if (p.text().empty()) return input_error(path.string() + ": the passphrase file's first line is empty");
  return p;
}

Result<PrivateKey> PrivateKey::generate(KeyType type) {
  EVP_PKEY* k = nullptr;
  if (type == KeyType::Ed25519) k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  else if (type == KeyType::EcdsaP256) k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  else return input_error("keys generate: key type " + std::string(key_type_name(type)) +
                          " is not offered; use ed25519 or ecdsa-p256");
  if (!k) return op_error("OpenSSL: key generation failed: " + detail::last_error());
  return PrivateKey(std::make_shared<const Impl>(Impl{detail::Pkey(k), type}));
}

Result<PrivateKey> PrivateKey::parse(std::string_view pem, const std::string& source, const Passphrase& passphrase) {
  auto labels = pem_labels(pem);
  if (labels.empty()) return input_error(source + ": not a PEM private key (no -----BEGIN line)");
  const std::string* label = nullptr;
  for (const auto& l : labels)
    if (ends_with(l, "PRIVATE KEY")) {
      label = &l;
      break;
    }
  if (!label)
    return input_error(source + " holds " + describe_label(labels.front()) + ", but a private key is needed here");
  if (*label == "OPENSSH PRIVATE KEY")
    return input_error(source + " is an OpenSSH key; convert it to PKCS#8 first (ssh-keygen -p -m PKCS8 -f FILE)");
  bool encrypted = *label == "ENCRYPTED PRIVATE KEY" || pem.find("Proc-Type: 4,ENCRYPTED") != std::string_view::npos;
  if (encrypted && !passphrase.set())
    return input_error(source + " is encrypted: give its passphrase (--passphrase-env VAR or --passphrase-file FILE)");

  ERR_clear_error();
  auto bio = detail::mem_reader(pem);
  PassphraseUse use{&passphrase};
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, passphrase_cb, &use);
  if (!k) {
    std::string why = detail::last_error();
    if (encrypted) return input_error(source + ": wrong passphrase (cannot decrypt the private key)");
    return input_error(source + ": malformed private key PEM" + (why.empty() ? "" : " (" + why + ")"));
  }
  detail::Pkey key(k);
  auto type = detail::key_type_of(k);
  if (!type)
    return input_error(source + ": unsupported key type " + std::string(EVP_PKEY_get0_type_name(k) ? EVP_PKEY_get0_type_name(k) : "?") +
                       " (use ed25519, ecdsa-p256, or for module signing rsa or ecdsa-p384)");
  return PrivateKey(std::make_shared<const Impl>(Impl{std::move(key), *type}));
}

Result<PrivateKey> PrivateKey::load(const std::filesystem::path& path, const Passphrase& passphrase) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto key = parse(text.value(), path.string(), passphrase);
  OPENSSL_cleanse(text.value().data(), text.value().size());
  if (key) warn_if_exposed(path);  // only once it is known to be a private key
  return key;
}

KeyType PrivateKey::type() const { return m_impl->type; }
std::string PrivateKey::id() const { return detail::key_id_of(m_impl->key.get()); }

PublicKey PrivateKey::public_key() const {
  unsigned char* der = nullptr;
  int len = i2d_PUBKEY(m_impl->key.get(), &der);
  const unsigned char* p = der;
  EVP_PKEY* pub = len > 0 ? d2i_PUBKEY(nullptr, &p, len) : nullptr;
  OPENSSL_free(der);
  if (!pub) throw Error(ErrorKind::Failed, "OpenSSL: cannot derive the public key: " + detail::last_error());
  return PublicKey(std::make_shared<const PublicKey::Impl>(PublicKey::Impl{detail::Pkey(pub), m_impl->type}));
}

Result<std::string> PrivateKey::to_pem(const Passphrase& passphrase) const {
  auto out = detail::mem_writer();
  int ok = 0;
  if (passphrase.set()) {
    // PKCS#8 with PBES2: PBKDF2-HMAC-SHA256 and AES-256-CBC (OpenSSL 3 defaults for this cipher).
    ok = PEM_write_bio_PKCS8PrivateKey(out.get(), m_impl->key.get(), EVP_aes_256_cbc(),
                                       const_cast<char*>(passphrase.text().data()),
                                       static_cast<int>(passphrase.text().size()), nullptr, nullptr);
  } else {
    ok = PEM_write_bio_PKCS8PrivateKey(out.get(), m_impl->key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  }
  if (ok != 1) return op_error("OpenSSL: cannot encode the private key: " + detail::last_error());
  return detail::bio_contents(out.get());
}

Result<PublicKey> PublicKey::parse(std::string_view pem, const std::string& source) {
  auto labels = pem_labels(pem);
  if (labels.empty()) return input_error(source + ": not a PEM public key (no -----BEGIN line)");
  if (labels.front() != "PUBLIC KEY") {
    if (ends_with(labels.front(), "PRIVATE KEY"))
      return input_error(source + " holds a private key; give the public key (NAME.pub) instead");
    return input_error(source + " holds " + describe_label(labels.front()) + ", but a public key is needed here");
  }
  ERR_clear_error();
  auto bio = detail::mem_reader(pem);
  EVP_PKEY* k = PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  if (!k) {
    std::string why = detail::last_error();
    return input_error(source + ": malformed public key PEM" + (why.empty() ? "" : " (" + why + ")"));
  }
  detail::Pkey key(k);
  auto type = detail::key_type_of(k);
  if (!type) return input_error(source + ": unsupported public key type");
  return PublicKey(std::make_shared<const Impl>(Impl{std::move(key), *type}));
}

Result<PublicKey> PublicKey::load(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse(text.value(), path.string());
}

KeyType PublicKey::type() const { return m_impl->type; }
std::string PublicKey::id() const { return detail::key_id_of(m_impl->key.get()); }

std::string PublicKey::to_pem() const {
  auto out = detail::mem_writer();
  if (PEM_write_bio_PUBKEY(out.get(), m_impl->key.get()) != 1)
    throw Error(ErrorKind::Failed, "OpenSSL: cannot encode a public key");
  return detail::bio_contents(out.get());
}

std::string PublicKey::der() const { return detail::public_der(m_impl->key.get()); }

Result<Keyring> Keyring::load_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return input_error(dir.string() + ": not a keyring folder");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".pub" && e.is_regular_file()) files.push_back(e.path());
  if (ec) return op_error(dir.string() + ": cannot list: " + ec.message());
  if (files.empty()) return input_error(dir.string() + ": keyring holds no *.pub keys");
  std::sort(files.begin(), files.end());
  Keyring ring;
  for (const auto& f : files) {
    auto key = PublicKey::load(f);
    if (!key) return key.error();
    ring.add(std::move(key).value());
  }
  return ring;
}

Keyring Keyring::of(PublicKey key) {
  Keyring ring;
  ring.add(std::move(key));
  return ring;
}

void Keyring::add(PublicKey key) {
  std::string id = key.id();
  m_keys.insert_or_assign(std::move(id), std::move(key));
}

const PublicKey* Keyring::find(std::string_view key_id) const {
  auto it = m_keys.find(key_id);
  return it == m_keys.end() ? nullptr : &it->second;
}

std::vector<std::string> Keyring::ids() const {
  std::vector<std::string> out;
  for (const auto& [id, key] : m_keys) out.push_back(id);
  return out;
}

}  // namespace gb::signing
