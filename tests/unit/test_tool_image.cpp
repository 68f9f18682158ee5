// The gpubundle tool image's pieces (node-images/tool_image.hpp) that need no
// package repository: ELF dependencies, soname -> package names, the package
// list's format, and merged /usr. tests/integration/tool_image.sh builds the
// real image and runs a driver build inside it.
#include <elf.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "node-images/layer.hpp"
#include "node-images/tool_image.hpp"
#include "tests/unit/fixtures.hpp"

using namespace gb;
using namespace gb::node_images;
using namespace gbtest;

namespace {

// A minimal dynamic ELF: one PT_LOAD mapping the file at `vaddr`, PT_INTERP,
// and PT_DYNAMIC with DT_NEEDED entries into a string table.
std::string tiny_elf(const std::vector<std::string>& needed, std::uint64_t vaddr = 0x400000, std::uint64_t strsz_extra = 0) {
  std::string strtab(1, '\0');
  std::vector<std::uint64_t> offsets;
  for (const auto& n : needed) {
    offsets.push_back(strtab.size());
    strtab += n + '\0';
  }
  const std::string interp = "/lib64/ld-linux-x86-64.so.2";
  const std::uint64_t phoff = sizeof(Elf64_Ehdr), phnum = 3;
  const std::uint64_t interp_off = phoff + phnum * sizeof(Elf64_Phdr);
  const std::uint64_t str_off = interp_off + interp.size() + 1;
  const std::uint64_t dyn_off = str_off + strtab.size();
  std::vector<Elf64_Dyn> dyn;
  for (auto o : offsets) dyn.push_back({DT_NEEDED, {o}});
  dyn.push_back({DT_STRTAB, {vaddr + str_off}});
  dyn.push_back({DT_STRSZ, {strtab.size() + strsz_extra}});
  dyn.push_back({DT_NULL, {0}});
  const std::uint64_t total = dyn_off + dyn.size() * sizeof(Elf64_Dyn);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_phoff = phoff;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = phnum;
  Elf64_Phdr load{PT_LOAD, PF_R, 0, vaddr, vaddr, total, total, 0x1000};
  Elf64_Phdr in{PT_INTERP, PF_R, interp_off, vaddr + interp_off, vaddr + interp_off, interp.size() + 1, interp.size() + 1, 1};
  Elf64_Phdr dy{PT_DYNAMIC, PF_R, dyn_off, vaddr + dyn_off, vaddr + dyn_off, dyn.size() * sizeof(Elf64_Dyn), dyn.size() * sizeof(Elf64_Dyn), 8};
  std::string out(reinterpret_cast<const char*>(&eh), sizeof eh);
  for (const auto& ph : {load, in, dy}) out.append(reinterpret_cast<const char*>(&ph), sizeof ph);
  out += interp + '\0';
  out += strtab;
  out.append(reinterpret_cast<const char*>(dyn.data()), dyn.size() * sizeof(Elf64_Dyn));
  return out;
}

}  // namespace

TEST_CASE("ELF dependencies: interpreter and DT_NEEDED in file order", "[tool-image][elf]") {
  auto deps = read_elf_deps(tiny_elf({"libcurl.so.4", "libc.so.6"}), "tiny");
  REQUIRE(deps);
  CHECK(deps->interpreter == "/lib64/ld-linux-x86-64.so.2");
  CHECK(deps->needed == std::vector<std::string>{"libcurl.so.4", "libc.so.6"});
  // This test binary is a real one: the loader finds libc through it.
  auto self = read_file("/proc/self/exe");
  REQUIRE(self);
  auto real = read_elf_deps(*self, "unit_tests");
  REQUIRE(real);
  CHECK(ends_with(real->interpreter, "/ld-linux-x86-64.so.2"));
  CHECK(std::find(real->needed.begin(), real->needed.end(), "libc.so.6") != real->needed.end());
}

TEST_CASE("ELF dependencies: what is not a sound ELF file is refused, naming it", "[tool-image][elf]") {
  auto bad = [](const std::string& bytes) {
    auto r = read_elf_deps(bytes, "gpubundle.bin");
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::Input);
    CHECK_THAT(r.error().message, Catch::StartsWith("gpubundle.bin: "));
    return r.error().message;
  };
  CHECK_THAT(bad("#!/bin/sh\necho hi\n"), Catch::Contains("not an ELF file"));
  std::string elf = tiny_elf({"libz.so.1"});
  CHECK_THAT(bad(elf.substr(0, sizeof(Elf64_Ehdr) + 10)), Catch::Contains("program headers"));
  std::string big_endian = elf;
  big_endian[EI_DATA] = ELFDATA2MSB;
  CHECK_THAT(bad(big_endian), Catch::Contains("little-endian"));
  // The string table's address mapped by no load segment.
  std::string unmapped = tiny_elf({"libz.so.1"});
  auto eh = *reinterpret_cast<const Elf64_Ehdr*>(unmapped.data());
  Elf64_Phdr load;
  std::memcpy(&load, unmapped.data() + eh.e_phoff, sizeof load);
  load.p_vaddr += 0x100000;
  std::memcpy(unmapped.data() + eh.e_phoff, &load, sizeof load);
  CHECK_THAT(bad(unmapped), Catch::Contains("dynamic string table"));
  // A name that runs past the string table's end.
  std::string past = tiny_elf({"libz.so.1"}, 0x400000, 0);
  auto at = past.find("libz.so.1");
  past[at + 9] = 'X';  // its NUL gone: the name runs into the dynamic section
  CHECK_THAT(bad(past), Catch::Contains("DT_NEEDED"));
}

TEST_CASE("a soname's Debian package: policy 8.1, and the list's exceptions", "[tool-image]") {
  const auto& c = tool_image_catalog();
  CHECK(soname_package("libcurl.so.4", c) == "libcurl4");
  CHECK(soname_package("libarchive.so.13", c) == "libarchive13");
  CHECK(soname_package("libsqlite3.so.0", c) == "libsqlite3-0");  // name ends in a digit
  CHECK(soname_package("libyaml-cpp.so.0.7", c) == "libyaml-cpp0.7");
  CHECK(soname_package("libgcc_s.so.1", c) == "libgcc-s1");  // '_' is no package name character
  CHECK(soname_package("libstdc++.so.6", c) == "libstdc++6");
  CHECK(soname_package("libm.so.6", c) == "libc6");       // glibc's
  CHECK(soname_package("libcrypto.so.3", c) == "libssl3");  // OpenSSL's
  CHECK(soname_package("libplugin.so", c).empty());         // no version: left to the layer check
}

TEST_CASE("the tool image's package list: what it holds and what it refuses", "[tool-image]") {
  const auto& c = tool_image_catalog();
  for (const char* p : {"make", "kmod", "gpgv", "libc6-dev", "dash", "coreutils"}) {
    INFO(p);
    CHECK(std::find(c.packages.begin(), c.packages.end(), p) != c.packages.end());
  }
  CHECK(std::find(c.alternatives.begin(), c.alternatives.end(), std::make_pair(std::string("usr/bin/cc"), std::string("gcc"))) !=
        c.alternatives.end());
  auto parsed = parse_tool_image_catalog("# comment\npackage make  # why\n\nlibrary libfoo.so.1 foo-runtime\n", "x.packages");
  REQUIRE(parsed);
  CHECK(parsed->packages == std::vector<std::string>{"make"});
  CHECK(soname_package("libfoo.so.1", *parsed) == "foo-runtime");
  for (const char* bad : {"package\n", "packages make\n", "alternative /usr/bin/cc gcc\n", "alternative usr/bin/cc ../gcc\n"}) {
    INFO(bad);
    auto r = parse_tool_image_catalog(std::string("package make\n") + bad, "x.packages");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::StartsWith("x.packages:2: "));
  }
}

TEST_CASE("merged /usr: tops become links, entries move below usr/, links still lead where they led", "[tool-image]") {
  TempDir t;
  const fs::path root = t / "root";
  fs::create_directories(root / "bin");
  fs::create_directories(root / "lib/x86_64-linux-gnu");
  fs::create_directories(root / "lib64");
  fs::create_directories(root / "usr/bin");
  fs::create_directories(root / "usr/lib/x86_64-linux-gnu");
  spit(root / "bin/dash", "dash from bin");
  spit(root / "usr/bin/dash", "dash from usr");
  fs::create_symlink("dash", root / "bin/sh");
  spit(root / "lib/x86_64-linux-gnu/libz.so.1", "zlib");
  spit(root / "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "loader");
  // As unpack.hpp writes absolute targets: relative, from the link's folder.
  fs::create_symlink("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root / "lib64/ld-linux-x86-64.so.2");
  fs::create_symlink("../../../lib/x86_64-linux-gnu/libz.so.1", root / "usr/lib/x86_64-linux-gnu/libz.so");
  fs::create_symlink("../bin/dash", root / "usr/bin/rbash");  // unmoved link, unmoved target: kept as written

  LayerBuilder layer;
  REQUIRE(add_merged_usr(layer, root));
  const auto& e = layer.entries();
  for (const auto& [path, entry] : e) {
    INFO(path);
    CHECK_FALSE((starts_with(path, "bin/") || starts_with(path, "lib/") || starts_with(path, "lib64/")));
  }
  auto link = [&](const std::string& p) {
    auto it = e.find(p);
    REQUIRE(it != e.end());
    REQUIRE(it->second.kind == LayerEntry::Kind::Symlink);
    return it->second.link;
  };
  CHECK(link("bin") == "usr/bin");
  CHECK(link("lib") == "usr/lib");
  CHECK(link("lib64") == "usr/lib64");
  CHECK(link("sbin") == "usr/sbin");
  CHECK(e.at("usr/sbin").kind == LayerEntry::Kind::Dir);
  CHECK(link("usr/bin/sh") == "dash");
  CHECK(link("usr/lib64/ld-linux-x86-64.so.2") == "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  CHECK(link("usr/lib/x86_64-linux-gnu/libz.so") == "libz.so.1");
  CHECK(link("usr/bin/rbash") == "../bin/dash");
  CHECK(e.at("usr/lib/x86_64-linux-gnu/libz.so.1").source == root / "lib/x86_64-linux-gnu/libz.so.1");
  CHECK(e.at("usr/bin/dash").source == root / "usr/bin/dash");  // usr/'s own wins
}

TEST_CASE("a slim tool image: no manual pages, translations or docs, but every copyright", "[tool-image]") {
  CHECK(tool_image_keeps("usr/bin/make"));
  CHECK(tool_image_keeps("usr/share/doc/make"));
  CHECK(tool_image_keeps("usr/share/doc/make/copyright"));
  CHECK(tool_image_keeps("usr/share/ca-certificates/mozilla/ISRG_Root_X1.crt"));
  CHECK_FALSE(tool_image_keeps("usr/share/doc/make/changelog.Debian.gz"));
  CHECK_FALSE(tool_image_keeps("usr/share/doc/make/examples/copyright"));
  CHECK_FALSE(tool_image_keeps("usr/share/man/man1/make.1.gz"));
  CHECK_FALSE(tool_image_keeps("usr/share/man"));
  CHECK(tool_image_keeps("usr/share/manifest"));
  CHECK_FALSE(tool_image_keeps("usr/share/locale/de/LC_MESSAGES/make.mo"));
  CHECK_FALSE(tool_image_keeps("usr/share/info/make.info.gz"));
}
