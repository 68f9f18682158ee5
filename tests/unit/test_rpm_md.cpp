// The rpm-md client's logic: rpm's version order, primary.xml read into
// libsolv and checked, and the closures, on in-memory documents. The signed fetch
// path runs against createrepo_c, gpg and dnf in tests/integration/packages_rpm.sh.
#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>

#include "packages/rpm_md.hpp"

using namespace gb;
using namespace gb::packages;
using namespace gb::recipes;

namespace {

struct Pkg {
  std::string name, arch = "x86_64", epoch = "0", ver, rel = "1.el9", source;
  std::vector<std::string> provides, requires_, files;
};

// "name" or "name OP e:v-r" -> an rpm:entry as createrepo_c writes it.
std::string entry(const std::string& dep) {
  auto sp = dep.find(' ');
  if (sp == std::string::npos || dep[0] == '(') return "<rpm:entry name=\"" + dep + "\"/>";
  std::string name = dep.substr(0, sp);
  auto sp2 = dep.find(' ', sp + 1);
  std::string op = dep.substr(sp + 1, sp2 - sp - 1), evr = dep.substr(sp2 + 1);
  std::string flags = op == "=" ? "EQ" : op == "<" ? "LT" : op == "<=" ? "LE" : op == ">" ? "GT" : "GE";
  std::string epoch = "0";
  if (auto c = evr.find(':'); c != std::string::npos) epoch = evr.substr(0, c), evr = evr.substr(c + 1);
  std::string rel;
  if (auto d = evr.find('-'); d != std::string::npos) rel = " rel=\"" + evr.substr(d + 1) + "\"", evr = evr.substr(0, d);
  return "<rpm:entry name=\"" + name + "\" flags=\"" + flags + "\" epoch=\"" + epoch + "\" ver=\"" + evr + "\"" + rel + "/>";
}

std::string element(const Pkg& p) {
  std::string file = p.name + "-" + p.ver + "-" + p.rel + "." + p.arch + ".rpm";
  std::string x = "<package type=\"rpm\">\n  <name>" + p.name + "</name>\n  <arch>" + p.arch + "</arch>\n  <version epoch=\"" +
                  p.epoch + "\" ver=\"" + p.ver + "\" rel=\"" + p.rel + "\"/>\n" +
                  "  <checksum type=\"sha256\" pkgid=\"YES\">" + std::string(64, p.name.size() % 2 ? 'a' : 'b') + "</checksum>\n" +
                  "  <summary>" + p.name + " &amp; friends</summary>\n  <size package=\"1234\" installed=\"5678\" archive=\"6000\"/>\n" +
                  "  <location href=\"Packages/" + file + "\"/>\n  <format>\n    <rpm:license>GPLv2</rpm:license>\n" +
                  "    <rpm:sourcerpm>" + p.source + "</rpm:sourcerpm>\n    <rpm:header-range start=\"4504\" end=\"9000\"/>\n";
  x += "    <rpm:provides>\n      " + entry(p.name + " = " + p.epoch + ":" + p.ver + "-" + p.rel) + "\n";
  for (const auto& d : p.provides) x += "      " + entry(d) + "\n";
  x += "    </rpm:provides>\n    <rpm:requires>\n";
  for (const auto& d : p.requires_) x += "      " + entry(d) + "\n";
  x += "    </rpm:requires>\n";
  for (const auto& f : p.files) x += "    <file>" + f + "</file>\n";
  return x + "  </format>\n</package>\n";
}

std::string document(const std::vector<Pkg>& pkgs) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata xmlns=\"http://linux.duke.edu/metadata/common\" "
                  "xmlns:rpm=\"http://linux.duke.edu/metadata/rpm\" packages=\"" + std::to_string(pkgs.size()) + "\">\n";
  for (const auto& p : pkgs) x += element(p);
  return x + "</metadata>\n";
}

PackageSource source() {
  PackageSource s;
  s.name = "el9";
  s.format = PackageFormat::RpmMd;
  s.url = "http://mirror.example/el9";
  s.suites = {"BaseOS", "AppStream"};
  return s;
}

const std::string k_kernel_src = "kernel-6.1.0-1.el9.src.rpm";

// A small RHEL-like repository: two kernels, a toolchain, a shell.
std::vector<Pkg> repo() {
  return {
      {"kernel-devel", "x86_64", "0", "6.1.0", "1.el9", k_kernel_src, {}, {"kernel-headers = 6.1.0-1.el9", "/bin/sh", "gcc >= 11", "rpmlib(PayloadIsZstd) <= 5.4.18-1", "(elfutils-libelf-devel if gcc)"}, {}},
      {"kernel-devel", "x86_64", "0", "6.2.0", "1.el9", "kernel-6.2.0-1.el9.src.rpm", {}, {"kernel-headers = 6.2.0-1.el9", "/bin/sh"}, {}},
      {"kernel-headers", "x86_64", "0", "6.1.0", "1.el9", k_kernel_src, {}, {}, {}},
      {"kernel-headers", "x86_64", "0", "6.2.0", "1.el9", "kernel-6.2.0-1.el9.src.rpm", {}, {}, {}},
      {"kernel-core", "x86_64", "0", "6.1.0", "1.el9", k_kernel_src, {"kernel = 6.1.0-1.el9"}, {"kernel-modules-core-uname-r = 6.1.0-1.el9.x86_64", "bash", "(dracut or mkinitrd)"}, {}},
      {"kernel-modules-core", "x86_64", "0", "6.1.0", "1.el9", k_kernel_src, {"kernel-modules-core-uname-r = 6.1.0-1.el9.x86_64"}, {"/bin/sh"}, {}},
      {"bash", "x86_64", "0", "5.1.8", "6.el9", "bash-5.1.8-6.el9.src.rpm", {"/bin/sh"}, {"libc.so.6()(64bit)"}, {"/usr/bin/bash", "/usr/bin/sh"}},
      {"gcc", "x86_64", "0", "11.4.1", "3.el9", "gcc-11.4.1-3.el9.src.rpm", {}, {"libc.so.6()(64bit)", "/usr/bin/sh"}, {"/usr/bin/gcc"}},
      {"gcc", "x86_64", "0", "11.3.1", "4.el9", "gcc-11.3.1-4.el9.src.rpm", {}, {"libc.so.6()(64bit)"}, {"/usr/bin/gcc"}},
      {"gcc", "aarch64", "0", "12.0.0", "1.el9", "gcc-12.0.0-1.el9.src.rpm", {}, {}, {"/usr/bin/gcc"}},
      {"glibc", "x86_64", "0", "2.34", "100.el9", "glibc-2.34-100.el9.src.rpm", {"libc.so.6()(64bit)"}, {}, {}},
      {"glibc", "i686", "0", "2.34", "100.el9", "glibc-2.34-100.el9.src.rpm", {"libc.so.6"}, {}, {}},
      {"elfutils-libelf-devel", "x86_64", "0", "0.190", "2.el9", "elfutils-0.190-2.el9.src.rpm", {}, {}, {}},
      {"dracut", "x86_64", "0", "057", "53.el9", "dracut-057-53.el9.src.rpm", {}, {"/bin/sh"}, {}},
      {"mkinitrd", "noarch", "0", "1", "1.el9", "mkinitrd-1-1.el9.src.rpm", {}, {}, {}},
  };
}

rpm_md::Index index_of(const std::vector<Pkg>& pkgs) {
  rpm_md::Index idx("x86_64");
  auto r = idx.add_primary(document(pkgs), source(), "http://mirror.example/el9/BaseOS", "primary.xml");
  if (!r.ok()) FAIL(r.error().message);
  return idx;
}

// Every package of one document, as read.
Result<std::vector<Package>> parse_primary(const std::string& xml, const std::string& what = "primary.xml") {
  rpm_md::Index idx("x86_64");
  if (auto r = idx.add_primary(xml, source(), "http://mirror.example/el9/BaseOS", what); !r) return r.error();
  return idx.packages();
}

FetchRequest request(std::vector<std::string> names, Closure closure = Closure::Full) {
  FetchRequest q;
  q.names = std::move(names);
  q.arch = "x86_64";
  q.closure = closure;
  q.why = "kernel 6.1.0-1.el9.x86_64";
  return q;
}

// name-version.arch of each resolved package, in the order returned.
std::vector<std::string> nevras(const Result<std::vector<Package>>& r) {
  if (!r.ok()) FAIL(r.error().message);
  std::vector<std::string> out;
  for (const auto& p : r.value()) out.push_back(p.name + "-" + p.version + "." + p.arch);
  return out;
}

std::string error_of(const Result<std::vector<Package>>& r) { return r.ok() ? std::string() : r.error().message; }

std::string parse_error(const std::string& xml) {
  return error_of(parse_primary(xml, "http://mirror.example/el9/BaseOS/repodata/primary.xml.gz"));
}

}  // namespace

TEST_CASE("rpm versions compare as rpmvercmp does", "[rpm]") {
  // rpm's own table (tests/rpmvercmp.at), each answer as `rpm.vercmp` gives it.
  struct Row {
    const char* a;
    const char* b;
    int want;
  };
  const Row rows[] = {
      {"1.0", "1.0", 0}, {"1.0", "2.0", -1}, {"2.0.1", "2.0.1", 0}, {"2.0", "2.0.1", -1}, {"2.0.1a", "2.0.1", 1},
      {"5.5p1", "5.5p2", -1}, {"5.5p10", "5.5p1", 1}, {"10xyz", "10.1xyz", -1}, {"xyz10", "xyz10.1", -1}, {"xyz.4", "8", -1},
      {"xyz.4", "2", -1}, {"5.6p1", "6.5p1", -1}, {"6.0.rc1", "6.0", 1}, {"10b2", "10a1", 1}, {"10a2", "10b2", -1},
      {"1.0a", "1.0aa", -1}, {"10.0001", "10.1", 0}, {"10.0001", "10.0039", -1}, {"4.999.9", "5.0", -1},
      {"20101121", "20101122", -1}, {"2.0", "2_0", 0}, {"a", "b", -1}, {"a+", "a_", 0}, {"+a", "_a", 0}, {"+", "_", 0},
      {"1.0~rc1", "1.0", -1}, {"1.0~rc1", "1.0~rc2", -1}, {"1.0~rc1~git123", "1.0~rc1", -1}, {"1.0^", "1.0", 1},
      {"1.0", "1.0^git1", -1}, {"1.0^git1", "1.0^git2", -1}, {"1.0^git1", "1.01", -1}, {"1.0^20160101", "1.0.1", -1},
      {"1.0^20160101^git1", "1.0^20160101", 1}, {"1.0~rc1^git1", "1.0~rc1", 1}, {"1.0^git1~pre", "1.0^git1", -1},
      {"1.0~rc1", "1.0~rc1^git1", -1}, {"0001", "1", 0}, {"1.005", "1.5", 0},
  };
  for (const auto& row : rows) {
    INFO(row.a << " vs " << row.b);
    CHECK(rpm_md::compare_versions(row.a, row.b) == row.want);
    CHECK(rpm_md::compare_versions(row.b, row.a) == -row.want);
  }
}

TEST_CASE("rpm epochs and releases order versions", "[rpm]") {
  CHECK(rpm_md::compare_versions("1:1.0-1", "2.0-1") > 0);  // any epoch beats a missing one
  CHECK(rpm_md::compare_versions("0:1.0-1", "1.0-1") == 0);
  CHECK(rpm_md::compare_versions("10:1", "9:2") > 0);       // epochs are numbers, not strings
  CHECK(rpm_md::compare_versions("1.0-2", "1.0-1") > 0);
  CHECK(rpm_md::compare_versions("1.0-1.el9", "1.0-1.el9_4") < 0);
  CHECK(rpm_md::compare_versions("5.14.0-427.13.1.el9_4", "5.14.0-70.13.1.el9_0") > 0);
  CHECK(rpm_md::compare_versions("1.0", "1.0-7") == 0);  // no release on one side: versions only, as in Requires
}

TEST_CASE("primary.xml reads packages with entities and files", "[rpm]") {
  std::string doc = document(repo());
  // A description with every entity kind, and a provide spelled with entities.
  std::string extra = "<package type=\"rpm\"><name>perl-Carp</name><arch>noarch</arch><version epoch=\"1\" ver=\"1.50\" rel=\"460.el9\"/>"
                      "<checksum type=\"sha256\" pkgid=\"YES\">ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789</checksum>"
                      "<description>&lt;Carp&gt; &quot;croak&quot; &apos;n&apos; &#65;&#x42;&#x263A; &amp;c.</description>"
                      "<size package=\"30000\"/><location href=\"Packages/p/perl-Carp-1.50-460.el9.noarch.rpm\"/>"
                      "<format><rpm:sourcerpm>perl-&#67;arp-1.50-460.el9.src.rpm</rpm:sourcerpm>"
                      "<rpm:provides><rpm:entry name=\"perl(Carp)\" flags=\"EQ\" epoch=\"0\" ver=\"1.50\"/><rpm:entry name=\"a&amp;b\"/></rpm:provides>"
                      "<rpm:requires><rpm:entry name=\"rpmlib(CompressedFileNames)\" flags=\"LE\" epoch=\"0\" ver=\"3.0.4\" rel=\"1\" pre=\"1\"/></rpm:requires><file>/usr/share/perl5/Carp.pm</file></format></package>";
  doc.insert(doc.rfind("</metadata>"), extra + "\n<!-- a comment -->\n");
  auto r = parse_primary(doc);
  REQUIRE(r.ok());
  REQUIRE(r->size() == repo().size() + 1);
  const Package& devel = r->front();
  CHECK(devel.name == "kernel-devel");
  CHECK(devel.version == "6.1.0-1.el9");  // epoch 0 is not spelled
  CHECK(devel.arch == "x86_64");
  CHECK(devel.source == k_kernel_src);
  CHECK(devel.location == "Packages/kernel-devel-6.1.0-1.el9.x86_64.rpm");
  CHECK(devel.repo_url == "http://mirror.example/el9/BaseOS");
  CHECK(devel.origin == "el9");
  CHECK(devel.size == 1234);
  CHECK(devel.sha256 == std::string(64, 'b'));
  const Package& carp = r->back();
  CHECK(carp.version == "1:1.50-460.el9");
  CHECK(carp.sha256 == "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  CHECK(carp.source == "perl-Carp-1.50-460.el9.src.rpm");  // decoded
  CHECK(carp.location == "Packages/p/perl-Carp-1.50-460.el9.noarch.rpm");
  // "a&b" is a provide; rpmlib() is rpm's own.
  auto pkgs = repo();
  pkgs.push_back({"needs-ab", "noarch", "0", "1", "1", "x.src.rpm", {}, {"a&amp;b", "perl(Carp) >= 1.49"}, {}});
  std::string with_ab = document(pkgs);
  with_ab.insert(with_ab.rfind("</metadata>"), extra);
  rpm_md::Index idx("x86_64");
  REQUIRE(idx.add_primary(with_ab, source(), "http://mirror.example/el9/BaseOS", "primary.xml").ok());
  CHECK(nevras(idx.resolve(request({"needs-ab"}), {source()})) ==
        std::vector<std::string>{"needs-ab-1-1.noarch", "perl-Carp-1:1.50-460.el9.noarch"});
}

TEST_CASE("the Full closure follows Requires as dnf picks providers", "[rpm]") {
  auto idx = index_of(repo());
  // kernel-headers by its exact version (6.2.0 is newer and not taken), /bin/sh from bash's provide,
  // the newest x86_64 gcc (not aarch64's 12), glibc's soname for x86_64 only, the if-dependency
  // because gcc came in; rpmlib() is rpm's own.
  auto r = idx.resolve(request({"kernel-devel-6.1.0-1.el9.x86_64"}), {source()});
  CHECK(nevras(r) == std::vector<std::string>{"bash-5.1.8-6.el9.x86_64", "elfutils-libelf-devel-0.190-2.el9.x86_64",
                                               "gcc-11.4.1-3.el9.x86_64", "glibc-2.34-100.el9.x86_64",
                                               "kernel-devel-6.1.0-1.el9.x86_64", "kernel-headers-6.1.0-1.el9.x86_64"});
  // A file requirement is met by a package's <file> as well.
  Pkg needs_file{"needs-file", "noarch", "0", "1", "1", "x.src.rpm", {}, {"/usr/bin/gcc"}, {}};
  auto with = repo();
  with.push_back(needs_file);
  CHECK(nevras(index_of(with).resolve(request({"needs-file"}), {source()})) ==
        std::vector<std::string>{"bash-5.1.8-6.el9.x86_64", "gcc-11.4.1-3.el9.x86_64", "glibc-2.34-100.el9.x86_64",
                                 "needs-file-1-1.noarch"});
  // "(dracut if bash)" is listed before the "/bin/sh" that brings bash in, and still counts.
  auto later = repo();
  later.push_back({"needs-if-later", "noarch", "0", "1", "1", "x.src.rpm", {}, {"(dracut if bash)", "(mkinitrd if gone)", "/bin/sh"}, {}});
  CHECK(nevras(index_of(later).resolve(request({"needs-if-later"}), {source()})) ==
        std::vector<std::string>{"bash-5.1.8-6.el9.x86_64", "dracut-057-53.el9.x86_64", "glibc-2.34-100.el9.x86_64",
                                 "needs-if-later-1-1.noarch"});
  // (dracut or mkinitrd): the first alternative.
  CHECK(nevras(idx.resolve(request({"kernel-core"}), {source()})) ==
        std::vector<std::string>{"bash-5.1.8-6.el9.x86_64", "dracut-057-53.el9.x86_64", "glibc-2.34-100.el9.x86_64",
                                 "kernel-core-6.1.0-1.el9.x86_64", "kernel-modules-core-6.1.0-1.el9.x86_64"});
}

TEST_CASE("Conflicts and Obsoletes are the solver's: a choice is revisited, an impossible set refused", "[rpm]") {
  // The greedy walk took the first provider for good; libsolv backs out of
  // one that conflicts with what else is needed.
  auto pkgs = repo();
  pkgs.push_back({"wants-shell", "noarch", "0", "1", "1", "x.src.rpm", {}, {"shell", "zsh-compat"}, {}});
  pkgs.push_back({"ash", "noarch", "0", "1", "1", "ash.src.rpm", {"shell"}, {}, {}});
  pkgs.push_back({"zsh", "noarch", "0", "1", "1", "zsh.src.rpm", {"shell", "zsh-compat"}, {}, {}});
  std::string doc = document(pkgs);
  // ash conflicts with zsh-compat: only zsh meets both.
  auto at = doc.find("<name>ash</name>");
  REQUIRE(at != std::string::npos);
  auto req = doc.find("<rpm:requires>", at);
  doc.insert(req, "<rpm:conflicts><rpm:entry name=\"zsh-compat\"/></rpm:conflicts>\n    ");
  rpm_md::Index idx("x86_64");
  REQUIRE(idx.add_primary(doc, source(), "http://mirror.example/el9/BaseOS", "primary.xml").ok());
  auto r = idx.resolve(request({"wants-shell"}), {source()});
  CHECK(nevras(r) == std::vector<std::string>{"wants-shell-1-1.noarch", "zsh-1-1.noarch"});
  // Asking for both is impossible: one line, naming the packages and the source.
  auto both = idx.resolve(request({"ash", "zsh"}), {source()});
  REQUIRE_FALSE(both.ok());
  CHECK_THAT(both.error().message, Catch::StartsWith("kernel 6.1.0-1.el9.x86_64: "));
  CHECK_THAT(both.error().message, Catch::Contains("ash-1-1.noarch"));
  CHECK_THAT(both.error().message, Catch::Contains("zsh"));
  CHECK_THAT(both.error().message, Catch::EndsWith("in rpm-md source 'el9' (http://mirror.example/el9/BaseOS, http://mirror.example/el9/AppStream)"));
  CHECK(both.error().kind == ErrorKind::Input);
}

TEST_CASE("the SameSource closure stays within the kernel's source rpm", "[rpm]") {
  auto idx = index_of(repo());
  auto r = idx.resolve(request({"kernel-devel-6.1.0-1.el9.x86_64", "kernel-core-6.1.0-1.el9.x86_64"}, Closure::SameSource), {source()});
  CHECK(nevras(r) == std::vector<std::string>{"kernel-core-6.1.0-1.el9.x86_64", "kernel-devel-6.1.0-1.el9.x86_64",
                                               "kernel-headers-6.1.0-1.el9.x86_64", "kernel-modules-core-6.1.0-1.el9.x86_64"});
}

TEST_CASE("requested names match NAME, NAME.ARCH, NAME-VERSION[-RELEASE[.ARCH]] with or without the epoch", "[rpm]") {
  auto idx = index_of(repo());
  auto one = [&](const std::string& name) {
    auto r = idx.resolve(request({name}, Closure::SameSource), {source()});
    auto all = nevras(r);
    return all.empty() ? std::string() : all.back();
  };
  CHECK(one("kernel-headers") == "kernel-headers-6.2.0-1.el9.x86_64");  // the newest
  CHECK(one("kernel-headers.x86_64") == "kernel-headers-6.2.0-1.el9.x86_64");
  CHECK(one("kernel-headers-6.1.0-1.el9") == "kernel-headers-6.1.0-1.el9.x86_64");
  CHECK(one("kernel-headers-6.1.0-1.el9.x86_64") == "kernel-headers-6.1.0-1.el9.x86_64");
  CHECK(one("kernel-headers-0:6.1.0-1.el9.x86_64") == "kernel-headers-6.1.0-1.el9.x86_64");
  CHECK(one("mkinitrd") == "mkinitrd-1-1.el9.noarch");
  CHECK(one("gcc-11.3.1") == "gcc-11.3.1-4.el9.x86_64");  // NAME-VERSION, as the driver container asks gcc
  CHECK(one("kernel-headers-6.1.0") == "kernel-headers-6.1.0-1.el9.x86_64");
  CHECK(!error_of(idx.resolve(request({"kernel-headers-6.1"}), {source()})).empty());
  // Same version for x86_64 and noarch: the machine's arch, as dnf prefers.
  auto both = repo();
  both.push_back({"gcc", "noarch", "0", "11.4.1", "3.el9", "gcc-11.4.1-3.el9.src.rpm", {}, {}, {}});
  CHECK(nevras(index_of(both).resolve(request({"gcc"}, Closure::SameSource), {source()})).back() == "gcc-11.4.1-3.el9.x86_64");

  // Not there: one line naming the name, the kernel, the source and its repos.
  auto missing = idx.resolve(request({"kernel-devel-6.9.9-1.el9.x86_64"}), {source()});
  CHECK(error_of(missing) == "kernel 6.1.0-1.el9.x86_64: no package 'kernel-devel-6.9.9-1.el9.x86_64' for x86_64 in rpm-md source 'el9' "
                             "(http://mirror.example/el9/BaseOS, http://mirror.example/el9/AppStream)");
  CHECK(missing.error().kind == ErrorKind::Input);
  // Names are whole: kernel-devel-6.1.0-1.el9 is not a version of a package "kernel".
  auto kernel = repo();
  kernel.push_back({"kernel", "x86_64", "0", "6.1.0", "1.el9", k_kernel_src, {}, {}, {}});
  auto r = index_of(kernel).resolve(request({"kernel-devel-6.1.0-1.el9"}, Closure::SameSource), {source()});
  CHECK(nevras(r).front() == "kernel-devel-6.1.0-1.el9.x86_64");
  auto named_like_a_version = repo();
  named_like_a_version.push_back({"gcc-11.3.1", "noarch", "0", "1", "1", "x.src.rpm", {}, {}, {}});
  CHECK(nevras(index_of(named_like_a_version).resolve(request({"gcc-11.3.1"}, Closure::SameSource), {source()})) ==
        std::vector<std::string>{"gcc-11.3.1-1-1.noarch"});
  CHECK(!error_of(idx.resolve(request({"gcc-12.0.0-1.el9.aarch64"}), {source()})).empty());  // another arch
}

TEST_CASE("an unmet Requires is one line naming the package, the kernel and the source", "[rpm][hostile]") {
  auto pkgs = repo();
  pkgs.push_back({"needs-gone", "noarch", "0", "1", "1", "x.src.rpm", {}, {"kernel-headers >= 7.0"}, {}});
  pkgs.push_back({"needs-with", "noarch", "0", "1", "1", "x.src.rpm", {}, {"(gcc with glibc)"}, {}});
  pkgs.push_back({"needs-bad", "noarch", "0", "1", "1", "x.src.rpm", {}, {"(gcc or"}, {}});
  pkgs.push_back({"needs-unless", "noarch", "0", "1", "1", "x.src.rpm", {}, {"(dracut unless bash)", "(mkinitrd unless gone)"}, {}});
  pkgs.push_back({"needs-file-elsewhere", "noarch", "0", "1", "1", "x.src.rpm", {}, {"/usr/share/doc/x"}, {}});
  auto idx = index_of(pkgs);
  const std::string in = ", in rpm-md source 'el9' (http://mirror.example/el9/BaseOS, http://mirror.example/el9/AppStream)";
  CHECK(error_of(idx.resolve(request({"needs-gone"}), {source()})) ==
        "kernel 6.1.0-1.el9.x86_64: nothing provides kernel-headers >= 7.0 needed by needs-gone-1-1.noarch" + in);
  // `with`: one package that is both; none is.
  CHECK_THAT(error_of(idx.resolve(request({"needs-with"}), {source()})),
             Catch::StartsWith("kernel 6.1.0-1.el9.x86_64: nothing provides (gcc with glibc) needed by needs-with-1-1.noarch"));
  // An unparsable rich dependency is dropped by libsolv's reader, as dnf reads it.
  CHECK(nevras(idx.resolve(request({"needs-bad"}), {source()})) == std::vector<std::string>{"needs-bad-1-1.noarch"});
  CHECK_THAT(error_of(idx.resolve(request({"needs-file-elsewhere"}), {source()})), Catch::EndsWith("the repository names no filelists.xml)"));
  // SameSource is a filter over the Full closure: a gap elsewhere fails on the build machine, not at the site.
  CHECK_THAT(error_of(idx.resolve(request({"needs-gone"}, Closure::SameSource), {source()})), Catch::Contains("nothing provides"));
  // dracut needs /bin/sh, which is bash: "(dracut unless bash)" cannot hold, as dnf says too.
  CHECK(error_of(idx.resolve(request({"needs-unless"}), {source()})) ==
        "kernel 6.1.0-1.el9.x86_64: package needs-unless-1-1.noarch requires (dracut unless bash), but none of the providers can be installed" + in);
}

TEST_CASE("primary.xml outside its known shape is refused with the document", "[rpm][hostile]") {
  std::string good = document({repo().front()});
  auto with = [&](const std::string& from, const std::string& to) {
    std::string d = good;
    auto at = d.find(from);
    REQUIRE(at != std::string::npos);
    return d.replace(at, from.size(), to);
  };
  const std::string at = "http://mirror.example/el9/BaseOS/repodata/primary.xml.gz: ";
  CHECK(parse_error(good).empty());
  // The mirror's document is not the user's input: a failed operation (exit 1).
  auto broken = parse_primary("<metadata><package", "w");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().kind == ErrorKind::Failed);
  CHECK_THAT(parse_error(with("</summary>", "</name>")), Catch::StartsWith(at));
  CHECK_THAT(parse_error(good.substr(0, good.find("</format>"))), Catch::StartsWith(at));
  CHECK(parse_error(with("Packages/", "../../etc/")) ==
        at + "package 1 (kernel-devel): location href '../../etc/kernel-devel-6.1.0-1.el9.x86_64.rpm' is not an .rpm path below the repository");
  CHECK_THAT(parse_error(with("href=\"Packages/", "href=\"/Packages/")), Catch::EndsWith("is not an .rpm path below the repository"));
  CHECK_THAT(parse_error(with(".x86_64.rpm\"", ".x86_64.sh\"")), Catch::EndsWith("is not an .rpm path below the repository"));
  CHECK(parse_error(with("<location ", "<location xml:base=\"http://elsewhere/\" ")) ==
        at + "package 1 (kernel-devel): location xml:base (a package elsewhere) is not supported");
  CHECK(parse_error(with("type=\"sha256\" pkgid=\"YES\">" + std::string(64, 'b'), "type=\"sha1\" pkgid=\"YES\">" + std::string(40, 'b'))) ==
        at + "package 1 (kernel-devel): no sha256 checksum (sha256 only)");
  CHECK(parse_error(with("<name>kernel-devel</name>", "")) == at + "package 1: name '' is not an rpm package name");
  CHECK(parse_error(with("<name>kernel-devel</name>", "<name>kernel devel</name>")) ==
        at + "package 1 (kernel devel): name 'kernel devel' is not an rpm package name");
  CHECK_THAT(parse_error(with("<name>kernel-devel</name>", "<name>kernel\x1b[31m</name>")), Catch::Contains("not well-formed"));
  CHECK(parse_error(with("<name>kernel-devel</name>", "<name>kernel\x7f</name>")) ==
        at + "package 1 (kernel?): name 'kernel\\x7f' is not an rpm package name");
  CHECK_THAT(parse_error(with("ver=\"6.1.0\"", "ver=\"6.1-0\"")), Catch::Contains("is not an rpm version"));
  // Entity expansion is bounded (expat's amplification limit): a billion laughs is refused, not expanded.
  std::string laughs = "<?xml version=\"1.0\"?>\n<!DOCTYPE metadata [<!ENTITY a \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\">";
  for (char c = 'b'; c <= 'j'; ++c)
  {
    std::string ten;  // &a;&a;... ten times the entity before
    for (int i = 0; i < 10; ++i) ten += std::string("&") + static_cast<char>(c - 1) + ";";
    laughs += std::string("<!ENTITY ") + c + " \"" + ten + "\">";
  }
  laughs += "]>\n<metadata><package type=\"rpm\"><name>&j;</name></package></metadata>\n";
  auto start = std::chrono::steady_clock::now();
  CHECK(parse_error(laughs) == at + "a document type declaration (<!DOCTYPE), which repository metadata never has; refused");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  // However far in the prolog it comes.
  CHECK_THAT(parse_error(std::string(100000, ' ') + laughs), Catch::Contains("<!DOCTYPE"));
}

TEST_CASE("primary.xml text is decoded in time linear in the document", "[rpm][hostile]") {
  // Each text node once searched to the end of the document for an '&'; with
  // the only one at the end, 20000 packages took minutes. Now about a second.
  std::vector<Pkg> pkgs;
  for (int i = 0; i < 20000; ++i)
    pkgs.push_back({"pkg" + std::to_string(i), "x86_64", "0", "1.0", "1.el9", "pkg-1.0-1.el9.src.rpm", {}, {}, {"/usr/bin/p" + std::to_string(i)}});
  std::string doc = document(pkgs);
  std::string plain;  // every " &amp; " as " and " but the last
  plain.reserve(doc.size());
  size_t from = 0, last = doc.rfind(" &amp; ");
  for (auto at = doc.find(" &amp; "); at != last; at = doc.find(" &amp; ", from)) {
    plain.append(doc, from, at - from).append(" and ");
    from = at + 7;
  }
  doc = plain.append(doc, from, std::string::npos);
  auto start = std::chrono::steady_clock::now();
  auto r = parse_primary(doc);
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(r.ok());
  CHECK(r->size() == 20000);
  CHECK(std::count(doc.begin(), doc.end(), '&') == 1);  // the one entity, at the end
  INFO(seconds << " s");
  CHECK(seconds < 30);  // generous for the sanitizer build; the quadratic reader needed minutes
}

TEST_CASE("rpm-md: a file requirement that only filelists.xml answers", "[rpm]") {
  // createrepo_c's primary.xml lists only files in bin/ and /etc; the rest of
  // a package's files are in filelists.xml, matched to it by pkgid.
  Pkg user{"helper-user", "x86_64", "0", "1.0", "1.el9", "helper-user-1.0-1.el9.src.rpm", {}, {"/usr/libexec/gpubundle/helper"}, {}};
  Pkg tools{"helper-tools", "x86_64", "0", "1.0", "1.el9", "helper-tools-1.0-1.el9.src.rpm", {}, {}, {"/usr/bin/helper-tools"}};
  REQUIRE(user.name.size() % 2 != tools.name.size() % 2);  // distinct pkgids (element())
  rpm_md::Index idx = index_of({user, tools});
  auto before = idx.resolve(request({"helper-user"}), {source()});
  REQUIRE_FALSE(before.ok());
  CHECK_THAT(before.error().message, Catch::Contains("/usr/libexec/gpubundle/helper"));
  CHECK_THAT(before.error().message, Catch::Contains("kernel 6.1.0-1.el9.x86_64"));
  CHECK_THAT(before.error().message, Catch::Contains("filelists.xml"));
  CHECK_FALSE(idx.needs_filelists());  // add_primary read no repomd.xml: no filelists.xml is known

  const std::string filelists =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<filelists xmlns=\"http://linux.duke.edu/metadata/filelists\" packages=\"2\">\n"
      "<package pkgid=\"" + std::string(64, 'a') + "\" name=\"helper-user\" arch=\"x86_64\">\n"
      "  <version epoch=\"0\" ver=\"1.0\" rel=\"1.el9\"/>\n  <file>/usr/share/helper-user/README</file>\n</package>\n"
      "<package pkgid=\"" + std::string(64, 'b') + "\" name=\"helper-tools\" arch=\"x86_64\">\n"
      "  <version epoch=\"0\" ver=\"1.0\" rel=\"1.el9\"/>\n  <file>/usr/bin/helper-tools</file>\n"
      "  <file>/usr/libexec/gpubundle/helper</file>\n</package>\n</filelists>\n";
  REQUIRE(idx.add_filelists(filelists, "http://mirror.example/el9/BaseOS", "filelists.xml").ok());
  auto after = idx.resolve(request({"helper-user"}), {source()});
  INFO((after ? std::string() : after.error().message));
  REQUIRE(after.ok());
  std::vector<std::string> names;
  for (const auto& p : *after) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"helper-tools", "helper-user"});

  CHECK_FALSE(idx.add_filelists(filelists, "http://mirror.example/el9/Other", "filelists.xml").ok());  // no such repo read
  CHECK_FALSE(idx.add_filelists("<!DOCTYPE x [<!ENTITY a \"b\">]><filelists/>", "http://mirror.example/el9/BaseOS", "f.xml").ok());
}

TEST_CASE("rpm-md: repomd.xml's primary and filelists entries, read by libsolv and checked", "[rpm]") {
  auto data = [](const std::string& type, const std::string& href, const std::string& sum_type = "sha256") {
    return "  <data type=\"" + type + "\">\n    <checksum type=\"" + sum_type + "\">" + std::string(sum_type == "sha512" ? 128 : 64, 'c') +
           "</checksum>\n    <open-checksum type=\"sha256\">" + std::string(64, 'd') + "</open-checksum>\n    <location href=\"" +
           href + "\"/>\n    <timestamp>1796306430</timestamp>\n    <size>134</size>\n    <open-size>167</open-size>\n  </data>\n";
  };
  auto doc = [](const std::string& body) {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<repomd xmlns=\"http://linux.duke.edu/metadata/repo\" "
           "xmlns:rpm=\"http://linux.duke.edu/metadata/rpm\">\n  <revision>1796306430</revision>\n" + body + "</repomd>\n";
  };
  auto md = rpm_md::parse_repomd(doc(data("primary", "repodata/p.xml.gz") + data("filelists", "repodata/f.xml.gz") +
                                     data("other", "repodata/o.xml.gz") + data("primary_db", "repodata/p.sqlite.bz2")),
                                 "repomd.xml");
  INFO((md ? std::string() : md.error().message));
  REQUIRE(md.ok());
  CHECK(md->primary.href == "repodata/p.xml.gz");
  CHECK(md->primary.sha256 == std::string(64, 'c'));
  CHECK(md->primary.open_sha256 == std::string(64, 'd'));
  CHECK(md->primary.size == 134);
  REQUIRE(md->filelists);
  CHECK(md->filelists->href == "repodata/f.xml.gz");
  CHECK_FALSE(rpm_md::parse_repomd(doc(data("primary", "repodata/p.xml.gz")), "r").value().filelists);

  auto error = [&](const std::string& xml) {
    auto r = rpm_md::parse_repomd(xml, "repomd.xml");
    return r ? std::string("(read)") : r.error().message;
  };
  CHECK(error(doc(data("filelists", "repodata/f.xml.gz"))) == "repomd.xml: no <data type=\"primary\">");
  CHECK(error(doc(data("primary", "a") + data("primary", "b"))) == "repomd.xml: two <data type=\"primary\">");
  CHECK(error(doc(data("primary", "../../etc/passwd"))) ==
        "repomd.xml: primary location href '../../etc/passwd' is not a path below the repository");
  CHECK(error(doc(data("primary", "/abs/p.xml.gz"))).find("is not a path below the repository") != std::string::npos);
  CHECK(error(doc(data("primary", "https://elsewhere/p.xml.gz"))).find("is not a path below the repository") != std::string::npos);
  CHECK(error(doc(data("filelists", "repodata/f.xml.gz", "sha512") + data("primary", "p"))) ==
        "repomd.xml: filelists checksum type is not supported (sha256 only)");
  CHECK(error("<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!ENTITY a \"aaaa\">]>\n" + doc(data("primary", "p")).substr(39)) ==
        "repomd.xml: a document type declaration (<!DOCTYPE), which repository metadata never has; refused");
  CHECK(error("not xml at all") != "(read)");
}
