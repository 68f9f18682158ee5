#include "signing/module_sign.hpp"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>
#include <vector>

#include "common/files.hpp"
#include "common/process.hpp"
#include "signing/digest.hpp"
#include "signing/openssl_detail.hpp"

namespace gb::signing {

struct ModuleSigner::Impl {
  PrivateKey key;
  detail::X509Ptr cert;
  std::string fingerprint, subject, common_name, cert_der;
};

namespace {

constexpr std::uint8_t kPkeyIdPkcs7 = 2;
constexpr std::size_t kTrailerSize = 12;  // sizeof(struct module_signature)

struct FreeCms {
  void operator()(CMS_ContentInfo* c) const { CMS_ContentInfo_free(c); }
};

Result<detail::X509Ptr> load_certificate(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  const std::string& t = text.value();
  const std::string source = path.string();
  ERR_clear_error();
  X509* cert = nullptr;
  if (t.find("-----BEGIN CERTIFICATE-----") != std::string::npos) {
    auto bio = detail::mem_reader(t);
    cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (!cert) return input_error(source + ": malformed PEM certificate (" + detail::last_error() + ")");
  } else if (t.find("PRIVATE KEY-----") != std::string::npos) {
    return input_error(source + " holds a private key, but the signing certificate (PEM or DER) is needed here");
  } else if (t.find("-----BEGIN ") != std::string::npos) {
    return input_error(source + ": not a certificate (expected PEM \"BEGIN CERTIFICATE\" or DER)");
  } else {
    const auto* p = reinterpret_cast<const unsigned char*>(t.data());
    cert = d2i_X509(nullptr, &p, static_cast<long>(t.size()));
    if (!cert) return input_error(source + ": not a certificate (neither PEM nor DER X.509)");
  }
  return detail::X509Ptr(cert);
}

std::string name_rfc2253(const X509_NAME* name) {
  auto out = detail::mem_writer();
  X509_NAME_print_ex(out.get(), name, 0, XN_FLAG_RFC2253);
  return detail::bio_contents(out.get());
}

std::string common_name_of(const X509_NAME* name) {
  int idx = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (idx < 0) return "";
  const ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
  unsigned char* utf8 = nullptr;
  int len = ASN1_STRING_to_UTF8(&utf8, s);
  if (len < 0) return "";
  std::string cn(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
  OPENSSL_free(utf8);
  return cn;
}

std::uint32_t be32(std::string_view b) {
  auto u = [&](size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(b[i])); };
  return u(0) << 24 | u(1) << 16 | u(2) << 8 | u(3);
}

bool is_elf(std::string_view data) { return data.size() >= 4 && data.substr(0, 4) == "\x7f" "ELF"; }

Failure not_elf(std::string_view data, const std::string& source) {
  std::string hint;
  if (data.substr(0, 6) == std::string_view("\xfd\x37\x7a\x58\x5a\x00", 6))
    hint = " (it is xz-compressed: sign before compressing)";
  else if (data.substr(0, 4) == std::string_view("\x28\xb5\x2f\xfd", 4))
    hint = " (it is zstd-compressed: sign before compressing)";
  else if (data.substr(0, 2) == std::string_view("\x1f\x8b", 2))
    hint = " (it is gzip-compressed: sign before compressing)";
  return input_error(source + ": not an ELF kernel module" + hint);
}

const EVP_MD* module_digest(const std::string& hash) {
  if (hash == "sha256") return EVP_sha256();
  if (hash == "sha384") return EVP_sha384();
  if (hash == "sha512") return EVP_sha512();
  return nullptr;
}

// Runs args[0] from PATH; its stderr's first line on failure.
Result<void> run_tool(CommandRunner& runner, const std::vector<std::string>& args, const std::string& what) {
  ProcessOptions po;
  po.not_found_hint = "install binutils, or sign without stripping";
  auto r = runner.run(args, po);
  if (!r) return op_error(what + ": " + r.error().message);
  if (r->status == 0) return {};
  std::string first = r->err.substr(0, r->err.find('\n'));
  return op_error(what + ": " + args[0] + " failed" + (first.empty() ? "" : ": " + first));
}

// Signs `module` (any existing signature is removed first; no stripping).
Result<std::string> sign_module(const ModuleSigner& signer, std::string_view module, const std::string& source,
                                const std::string& hash) {
  if (!is_elf(module)) return not_elf(module, source);
  auto base = unsigned_module(module, source);
  if (!base) return base.error();
  if (base->size() > static_cast<size_t>(INT_MAX)) return input_error(source + ": module too large to sign");
  const EVP_MD* md = module_digest(hash);
  if (!md) return input_error("module signing hash " + hash + " is not supported (sha256, sha384, sha512)");

  ERR_clear_error();
  auto in = detail::mem_reader(*base);
  std::unique_ptr<CMS_ContentInfo, FreeCms> cms(
      CMS_sign(nullptr, nullptr, nullptr, nullptr, CMS_NOCERTS | CMS_PARTIAL | CMS_BINARY | CMS_DETACHED | CMS_STREAM));
  if (!cms) return op_error(source + ": CMS_sign failed: " + detail::last_error());
  const auto& impl = signer.impl();
  if (!CMS_add1_signer(cms.get(), impl.cert.get(), detail::native(impl.key), md,
                       CMS_NOCERTS | CMS_BINARY | CMS_NOSMIMECAP | CMS_NOATTR))
    return op_error(source + ": CMS_add1_signer failed: " + detail::last_error());
  if (CMS_final(cms.get(), in.get(), nullptr, CMS_NOCERTS | CMS_BINARY) != 1)
    return op_error(source + ": CMS_final failed: " + detail::last_error());
  auto out = detail::mem_writer();
  if (i2d_CMS_bio_stream(out.get(), cms.get(), nullptr, 0) != 1)
    return op_error(source + ": cannot encode the CMS signature: " + detail::last_error());
  std::string sig = detail::bio_contents(out.get());

  std::string signed_module;
  signed_module.reserve(base->size() + sig.size() + kTrailerSize + kModuleSignatureMagic.size());
  signed_module.append(*base);
  signed_module.append(sig);
  char trailer[kTrailerSize] = {0, 0, static_cast<char>(kPkeyIdPkcs7), 0, 0, 0, 0, 0};
  auto len = static_cast<std::uint32_t>(sig.size());
  for (int i = 0; i < 4; ++i) trailer[8 + i] = static_cast<char>(len >> (24 - 8 * i));  // big-endian sig_len
  signed_module.append(trailer, kTrailerSize);
  signed_module.append(kModuleSignatureMagic);
  return signed_module;
}

// `strip --strip-debug` on a temporary copy of `module`; returns the result.
Result<std::string> strip_module_debug(std::string_view module, const std::string& source,
                                       const std::string& strip_program, CommandRunner* runner) {
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / "gpubundle-strip.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return op_error("cannot create a temp folder for strip: " + std::string(std::strerror(errno)));
  ScratchDir dir{std::filesystem::path(tmpl)};
  std::filesystem::path copy = dir.path() / "module.ko";
  auto w = write_atomic(copy, module, 0600);
  if (!w) return w.error();
  auto run = run_tool(runner ? *runner : system_runner(), {strip_program, "--strip-debug", copy.string()}, "stripping " + source);
  if (!run) return run.error();
  return read_file(copy);
}

}  // namespace

Result<ModuleSigner> ModuleSigner::load(const std::filesystem::path& key_path, const std::filesystem::path& cert_path,
                                        const Passphrase& passphrase) {
  if (key_path.empty()) return input_error("module signing needs a private key (--sign-key)");
  if (cert_path.empty())
    return input_error("module signing key " + key_path.string() +
                       " was given without its certificate: give --sign-cert (PEM or DER X.509)");
  auto key = PrivateKey::load(key_path, passphrase);
  if (!key) return key.error();
  if (key->type() == KeyType::Ed25519)
    return input_error(key_path.string() + ": an Ed25519 key cannot sign kernel modules; use RSA or ECDSA");
  auto cert = load_certificate(cert_path);
  if (!cert) return cert.error();
  ERR_clear_error();
  if (X509_check_private_key(cert->get(), detail::native(*key)) != 1) {
    ERR_clear_error();
    return input_error("key " + key_path.string() + " does not match certificate " + cert_path.string());
  }
  unsigned char* der = nullptr;
  int len = i2d_X509(cert->get(), &der);
  if (len <= 0) return op_error(cert_path.string() + ": cannot encode the certificate");
  std::string cert_der(reinterpret_cast<char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  const X509_NAME* subject = X509_get_subject_name(cert->get());
  return ModuleSigner(std::make_shared<const Impl>(Impl{std::move(key).value(), std::move(cert).value(), sha256_hex(cert_der),
                                                       name_rfc2253(subject), common_name_of(subject), std::move(cert_der)}));
}

KeyType ModuleSigner::key_type() const { return m_impl->key.type(); }
const std::string& ModuleSigner::fingerprint() const { return m_impl->fingerprint; }
const std::string& ModuleSigner::subject() const { return m_impl->subject; }
const std::string& ModuleSigner::common_name() const { return m_impl->common_name; }
const std::string& ModuleSigner::certificate_der() const { return m_impl->cert_der; }

Result<std::optional<AppendedSignature>> find_module_signature(std::string_view module, const std::string& source) {
  const size_t tail = kTrailerSize + kModuleSignatureMagic.size();
  if (module.size() < tail || module.substr(module.size() - kModuleSignatureMagic.size()) != kModuleSignatureMagic)
    return std::optional<AppendedSignature>();
  std::string_view trailer = module.substr(module.size() - tail, kTrailerSize);
  std::uint32_t sig_len = be32(trailer.substr(8, 4));
  if (sig_len == 0 || sig_len > module.size() - tail)
    return input_error(source + ": damaged module signature (sig_len " + std::to_string(sig_len) + " exceeds the file)");
  AppendedSignature s;
  s.cms_size = sig_len;
  s.module_size = module.size() - tail - sig_len;
  s.id_type = static_cast<std::uint8_t>(trailer[2]);
  return std::optional<AppendedSignature>(s);
}

Result<std::string_view> unsigned_module(std::string_view module, const std::string& source) {
  // sign-file run on a signed module stacks a second signature: peel them all.
  for (;;) {
    auto sig = find_module_signature(module, source);
    if (!sig) return sig.error();
    if (!sig.value()) return module;
    module = module.substr(0, sig.value()->module_size);
  }
}

Result<void> verify_module_signature(std::string_view module, const std::string& source,
                                     const std::filesystem::path& cert_path) {
  auto cert = load_certificate(cert_path);
  if (!cert) return cert.error();
  auto sig = find_module_signature(module, source);
  if (!sig) return op_error(sig.error().message);
  if (!sig.value()) return op_error(source + ": not signed (no \"~Module signature appended~\" trailer)");
  if (sig.value()->id_type != kPkeyIdPkcs7)
    return op_error(source + ": signature id_type " + std::to_string(sig.value()->id_type) + " is not PKCS#7");
  if (sig.value()->module_size > static_cast<size_t>(INT_MAX)) return op_error(source + ": module too large");
  ERR_clear_error();
  auto blob = detail::mem_reader(module.substr(sig.value()->module_size, sig.value()->cms_size));
  std::unique_ptr<CMS_ContentInfo, FreeCms> cms(d2i_CMS_bio(blob.get(), nullptr));
  if (!cms) return op_error(source + ": the appended signature is not valid CMS (" + detail::last_error() + ")");
  auto content = detail::mem_reader(module.substr(0, sig.value()->module_size));
  STACK_OF(X509)* certs = sk_X509_new_null();
  if (!certs || !sk_X509_push(certs, cert->get())) {
    sk_X509_free(certs);
    return op_error("OpenSSL: out of memory");
  }
  int ok = CMS_verify(cms.get(), certs, nullptr, content.get(), nullptr, CMS_BINARY | CMS_NO_SIGNER_CERT_VERIFY);
  sk_X509_free(certs);  // the certificate itself stays owned by `cert`
  if (ok != 1) {
    std::string why = detail::last_error();
    return op_error(source + ": signature does not verify with certificate " + cert_path.string() +
                    (why.empty() ? "" : " (" + why + ")"));
  }
  return {};
}

Result<ModuleSignReport> sign_module_file(const ModuleSigner& signer, const std::filesystem::path& in,
                                          const std::filesystem::path& out, const ModuleSignOptions& options) {
  auto data = read_file(in);
  if (!data) return data.error();
  const std::string source = in.string();
  if (!is_elf(data.value())) return not_elf(data.value(), source);
  auto base = unsigned_module(data.value(), source);
  if (!base) return base.error();
  ModuleSignReport report;
  report.had_signature = base->size() != data->size();
  std::string stripped;
  std::string_view to_sign = *base;
  if (options.strip_debug) {
    auto s = strip_module_debug(*base, source, options.strip_program, options.runner);
    if (!s) return s.error();
    stripped = std::move(s).value();
    to_sign = stripped;
  }
  report.unsigned_size = to_sign.size();
  auto signed_module = sign_module(signer, to_sign, source, options.hash);
  if (!signed_module) return signed_module.error();
  report.signed_size = signed_module->size();
  auto w = write_atomic(out, signed_module.value(), 0644);
  if (!w) return w.error();
  return report;
}

}  // namespace gb::signing
