#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "signing/keys.hpp"
#include "signing/module_sign.hpp"

using namespace gb;
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
