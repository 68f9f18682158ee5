#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "fake_runner.hpp"
#include "fixtures.hpp"
#include "signing/keys.hpp"
#include "signing/module_sign.hpp"

using namespace gb;
using namespace gb::signing;
namespace fs = std::filesystem;

namespace {

// <module><cms><12-byte trailer><magic>, as the kernel lays it out.
std::string append_signature(std::string module, const std::string& cms, std::uint8_t id_type = 2) {
  module += cms;
  auto n = static_cast<std::uint32_t>(cms.size());
  char trailer[12] = {0, 0, static_cast<char>(id_type), 0, 0, 0, 0, 0,
                      static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                      static_cast<char>(n)};
  module.append(trailer, 12);
  module += kModuleSignatureMagic;
  return module;
}

const std::string kElf = std::string("\x7f" "ELF\x02\x01\x01", 7) + std::string(200, 'm');

// An ECDSA P-256 key and its self-signed certificate, as PEM files.
ModuleSigner module_signer(const fs::path& dir) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 7);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("test module key"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_set_pubkey(cert, key);
  X509_sign(cert, key, EVP_sha256());
  BIO* k = BIO_new_file((dir / "module.key").c_str(), "w");
  PEM_write_bio_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr);
  BIO_free(k);
  fs::permissions(dir / "module.key", fs::perms::owner_read | fs::perms::owner_write);
  BIO* c = BIO_new_file((dir / "module.pem").c_str(), "w");
  PEM_write_bio_X509(c, cert);
  BIO_free(c);
  X509_free(cert);
  EVP_PKEY_free(key);
  return ModuleSigner::load(dir / "module.key", dir / "module.pem").value_or_throw();
}

}  // namespace

TEST_CASE("the appended module signature trailer is found and peeled", "[signing][module]") {
  CHECK_FALSE(find_module_signature(kElf, "m.ko").value().has_value());
  CHECK(unsigned_module(kElf, "m.ko").value() == kElf);

  std::string once = append_signature(kElf, std::string(300, 'c'));
  auto sig = find_module_signature(once, "m.ko").value();
  REQUIRE(sig.has_value());
  CHECK(sig->module_size == kElf.size());
  CHECK(sig->cms_size == 300);
  CHECK(sig->id_type == 2);
  CHECK(unsigned_module(once, "m.ko").value() == kElf);

  // sign-file run twice stacks signatures; all of them come off.
  std::string twice = append_signature(once, std::string(280, 'd'));
  CHECK(find_module_signature(twice, "m.ko").value()->module_size == once.size());
  CHECK(unsigned_module(twice, "m.ko").value() == kElf);

  // A trailer whose sig_len runs past the start of the file is damage, not a module.
  std::string damaged = once;
  damaged[damaged.size() - kModuleSignatureMagic.size() - 4] = '\x7f';
  auto bad = unsigned_module(damaged, "nvidia.ko");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("nvidia.ko: damaged module signature") == 0);
  std::string zero = append_signature(kElf, "");
  CHECK_FALSE(unsigned_module(zero, "m.ko").ok());
}

TEST_CASE("module signing refuses bad keys and non-ELF input before signing", "[signing][module]") {
  std::string tmpl = (fs::temp_directory_path() / "gb-modsign-test.XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  fs::path dir = tmpl;
  PrivateKey ed = PrivateKey::generate(KeyType::Ed25519).value();
  std::ofstream(dir / "ed.key") << ed.to_pem().value();

  auto no_cert = ModuleSigner::load(dir / "ed.key", "");
  REQUIRE_FALSE(no_cert.ok());
  CHECK(no_cert.error().kind == ErrorKind::Input);
  CHECK(no_cert.error().message.find("was given without its certificate") != std::string::npos);

  auto ed_key = ModuleSigner::load(dir / "ed.key", dir / "cert.der");
  REQUIRE_FALSE(ed_key.ok());
  CHECK(ed_key.error().message.find("an Ed25519 key cannot sign kernel modules") != std::string::npos);

  auto no_key = ModuleSigner::load("", dir / "cert.der");
  REQUIRE_FALSE(no_key.ok());
  fs::remove_all(dir);
}

TEST_CASE("strip --strip-debug runs on a private copy of the unsigned module; what it leaves is signed", "[signing][module][runner]") {
  gbtest::TempDir t;
  ModuleSigner signer = module_signer(t.path());
  gbtest::spit(t / "in.ko", append_signature(kElf, std::string(100, 'c')));  // an old signature, removed first
  const std::string stripped = kElf.substr(0, 120);
  std::string given;
  gbtest::FakeRunner strip([&](const gbtest::Call& c) -> Result<ProcessResult> {
    given = gbtest::slurp(c.argv.back());
    gbtest::spit(c.argv.back(), stripped);
    return gbtest::exited(0);
  });
  ModuleSignOptions options;
  options.strip_program = "/opt/binutils/strip";
  options.runner = &strip;
  auto report = sign_module_file(signer, t / "in.ko", t / "out.ko", options).value_or_throw();
  REQUIRE(strip.calls.size() == 1);
  const auto& c = strip.calls[0];
  fs::path copy = c.argv.back();
  CHECK(c.argv == std::vector<std::string>{"/opt/binutils/strip", "--strip-debug", copy.string()});
  CHECK(copy.parent_path().filename().string().rfind("gpubundle-strip.", 0) == 0);
  CHECK_FALSE(fs::exists(copy.parent_path()));  // the copy goes
  CHECK(c.options.not_found_hint == "install binutils, or sign without stripping");
  CHECK(given == kElf);
  CHECK(gbtest::slurp(t / "in.ko") == append_signature(kElf, std::string(100, 'c')));  // the input is left alone
  CHECK(report.had_signature);
  CHECK(report.unsigned_size == stripped.size());
  std::string out = gbtest::slurp(t / "out.ko");
  CHECK(unsigned_module(out, "out.ko").value() == stripped);
  CHECK(verify_module_signature(out, "out.ko", t / "module.pem"));

  // Stripping off: strip never runs, the module is signed as it came.
  options.strip_debug = false;
  sign_module_file(signer, t / "in.ko", t / "plain.ko", options).value_or_throw();
  CHECK(strip.calls.size() == 1);
  CHECK(unsigned_module(gbtest::slurp(t / "plain.ko"), "plain.ko").value() == kElf);
}

TEST_CASE("strip's failure stops signing, said with the module and strip's first stderr line", "[signing][module][runner]") {
  gbtest::TempDir t;
  ModuleSigner signer = module_signer(t.path());
  gbtest::spit(t / "in.ko", kElf);
  const std::string in = (t / "in.ko").string();
  auto sign_with = [&](gbtest::FakeRunner& strip) {
    ModuleSignOptions options;
    options.runner = &strip;
    return sign_module_file(signer, t / "in.ko", t / "out.ko", options);
  };
  gbtest::FakeRunner failing([](const gbtest::Call&) -> Result<ProcessResult> {
    return gbtest::exited(1, "", "strip: module.ko: file format not recognized\nstrip: second line\n");
  });
  auto r = sign_with(failing);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "stripping " + in + ": strip failed: strip: module.ko: file format not recognized");
  CHECK_FALSE(fs::exists(t / "out.ko"));

  gbtest::FakeRunner silent([](const gbtest::Call&) -> Result<ProcessResult> { return gbtest::exited(1); });
  CHECK(sign_with(silent).error().message == "stripping " + in + ": strip failed");

  gbtest::FakeRunner missing([](const gbtest::Call& c) -> Result<ProcessResult> {
    return op_error(c.argv[0] + ": cannot run it: No such file or directory (" + c.options.not_found_hint + ")");
  });
  CHECK(sign_with(missing).error().message ==
        "stripping " + in + ": strip: cannot run it: No such file or directory (install binutils, or sign without stripping)");
  CHECK_FALSE(fs::exists(t / "out.ko"));
}
