// The apt client's logic on in-memory text: Debian version order, deb822
// paragraphs, Release checks and the dependency closure libsolv solves. The
// closures expected are what apt-get -s install --no-install-recommends
// installs from the same Packages text (checked by hand against apt 2.6).
#include <catch2/catch.hpp>

#include <algorithm>

#include "packages/apt.hpp"

using namespace gb;
using namespace gb::packages;
using namespace gb::recipes;
namespace apt = gb::packages::apt;

namespace {

PackageSource source(const std::string& name = "debian", const std::string& url = "http://deb.example/debian") {
  PackageSource s;
  s.name = name;
  s.url = url;
  s.suites = {"bookworm"};
  s.components = {"main"};
  return s;
}

// A Packages stanza with the required fields filled; `extra` lines come after Version.
std::string stanza(const std::string& name, const std::string& version, const std::string& extra = "",
                   const std::string& arch = "amd64") {
  std::string s = "Package: " + name + "\nVersion: " + version + "\nArchitecture: " + arch + "\n" + extra;
  s += "Filename: pool/main/" + name.substr(0, 1) + "/" + name + "/" + name + "_" + version + "_" + arch + ".deb\n";
  s += "Size: 1234\nSHA256: " + std::string(64, 'a') + "\n";
  return s;
}

std::string packages_text(const std::vector<std::string>& stanzas) {
  std::string text;
  for (const auto& s : stanzas) text += s + "\n";
  return text;
}

apt::Index index_of(const std::vector<std::string>& stanzas, const PackageSource& src = source()) {
  apt::Index index("amd64");
  index.add_packages(packages_text(stanzas), src, "Packages").value_or_throw();
  return index;
}

std::vector<std::string> names(const std::vector<Package>& pkgs) {
  std::vector<std::string> out;
  for (const auto& p : pkgs) out.push_back(p.name + "=" + p.version);
  return out;
}

FetchRequest request(std::vector<std::string> names, Closure closure = Closure::Full) {
  FetchRequest r;
  r.names = std::move(names);
  r.arch = "amd64";
  r.closure = closure;
  r.why = "kernel 6.1.0-57-amd64";
  return r;
}

std::vector<std::string> closure_of(apt::Index& index, std::vector<std::string> wanted, Closure closure = Closure::Full) {
  return names(index.resolve(request(std::move(wanted), closure), {source()}).value_or_throw());
}

std::string resolve_error(apt::Index& index, std::vector<std::string> wanted, Closure closure = Closure::Full) {
  auto r = index.resolve(request(std::move(wanted), closure), {source(), source("security", "http://sec.example/d")});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message.find('\n') == std::string::npos);
  return r.error().message;
}

const std::string k_sources = "debian (http://deb.example/debian), security (http://sec.example/d)";

}  // namespace

TEST_CASE("Debian versions order as dpkg orders them", "[apt]") {
  // Each row: a < b.
  const std::vector<std::pair<std::string, std::string>> less = {
      {"1.0", "1.1"},
      {"1.0~rc1", "1.0"},            // tilde sorts before the end
      {"1.0~~", "1.0~~a"},           // deb-version(7)'s own example: ~~ < ~~a < ~ < (end) < a
      {"1.0~~a", "1.0~"},
      {"1.0~", "1.0"},
      {"1.0", "1.0a"},
      {"1.0a", "1.0+"},              // letters before other characters
      {"1.0", "1.0+dfsg"},
      {"9", "10"},                   // digit runs compare as numbers
      {"1.2", "1.10"},
      {"1.0", "1.0.1"},
      {"2.0", "1:1.0"},              // the epoch first
      {"9:1", "10:0"},
      {"9:1", "99999999999999999999:0"},
      {"1.0-1", "1.0-2"},            // then the revision
      {"1.0-9", "1.0-10"},
      {"2.36-9", "2.36-9+deb12u4"},
      {"1.2.3-1", "1.2.3-1ubuntu1"},
      {"6.1.176-1", "6.1.192-3"},
      {"1:2-3-1", "1:2-30-1"},       // a hyphen in the upstream part: the last one starts the revision
      {"1.0-1~bpo12+1", "1.0-1"},
      {"1.0-~", "1.0"},              // no revision is revision 0, after ~ (libsolv alone says before)
      {"1a0~", "1a"},                // a number dpkg reads as 0 before ~ (libsolv alone weighs '0' over the end)
  };
  for (const auto& [a, b] : less) {
    INFO(a << " < " << b);
    CHECK(apt::compare_versions(a, b) < 0);
    CHECK(apt::compare_versions(b, a) > 0);
  }
  const std::vector<std::pair<std::string, std::string>> equal = {
      {"1.0", "1.0"}, {"0:1.0", "1.0"}, {"1.0", "1.0-0"}, {"1.001", "1.1"}, {"00:1", "1"},
      {"1.0a", "1.0a0"}, {"1.", "1.0"}};  // a missing number is 0 to dpkg
  for (const auto& [a, b] : equal) {
    INFO(a << " == " << b);
    CHECK(apt::compare_versions(a, b) == 0);
    CHECK(apt::compare_versions(b, a) == 0);
  }
}

TEST_CASE("relation fields: groups, alternatives, arch qualifiers, versions", "[apt]") {
  auto r = apt::parse_relations("libc6 (>= 2.34), foo:any | bar (<< 1:2.0~), python3:native,\n baz:amd64 (= 1.0-1), old (> 1)");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 5);
  CHECK((*r)[0][0].name == "libc6");
  CHECK((*r)[0][0].op == apt::Op::GreaterEq);
  CHECK((*r)[0][0].version == "2.34");
  REQUIRE((*r)[1].size() == 2);
  CHECK((*r)[1][0].arch == "any");
  CHECK((*r)[1][1].op == apt::Op::Less);
  CHECK((*r)[1][1].version == "1:2.0~");
  CHECK((*r)[2][0].arch == "native");
  CHECK((*r)[3][0].arch == "amd64");
  CHECK((*r)[3][0].op == apt::Op::Eq);
  CHECK((*r)[4][0].op == apt::Op::GreaterEq);  // dpkg's obsolete '>' means >=
  for (const char* bad : {"Foo", "foo (>= )", "foo (~ 1)", "foo 1.0", "foo (>= 1", "foo:", ", foo", "foo | "}) {
    INFO(bad);
    CHECK_FALSE(apt::parse_relations(bad).ok());
  }
  CHECK(apt::parse_relations("  ")->empty());
}

TEST_CASE("Packages stanzas parse into packages with their entry verbatim", "[apt]") {
  std::string text =
      "Package: linux-headers-6.1.0-57-amd64\n"
      "Source: linux (6.1.192-3)\n"
      "Version: 6.1.192-3\n"
      "Architecture: amd64\n"
      "Depends: linux-headers-6.1.0-57-common (= 6.1.192-3),\n"
      " linux-kbuild-6.1 (>= 6.1.192-3)\n"
      "Description: Header files for Linux 6.1.0-57-amd64\n"
      " This package provides the architecture-specific kernel header files.\n"
      " .\n"
      " More text.\n"
      "Filename: pool/main/l/linux/linux-headers-6.1.0-57-amd64_6.1.192-3_amd64.deb\n"
      "Size: 1519792\n"
      "SHA256: 0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n"
      "\n"
      "\n"
      "Package: linux-headers-6.1.0-57-common\n"
      "Version: 6.1.192-3\n"
      "Architecture: all\n"
      "Filename: pool/main/l/linux/linux-headers-6.1.0-57-common_6.1.192-3_all.deb\n"
      "size: 10\n"  // field names are case-insensitive
      "SHA256: " + std::string(64, 'b') + "\n";
  auto r = apt::parse_packages(text, source(), "http://deb.example/debian/dists/bookworm/main/binary-amd64/Packages.xz");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  const Package& h = (*r)[0];
  CHECK(h.name == "linux-headers-6.1.0-57-amd64");
  CHECK(h.version == "6.1.192-3");
  CHECK(h.arch == "amd64");
  CHECK(h.source == "linux");
  CHECK(h.location == "pool/main/l/linux/linux-headers-6.1.0-57-amd64_6.1.192-3_amd64.deb");
  CHECK(h.file_name() == "linux-headers-6.1.0-57-amd64_6.1.192-3_amd64.deb");
  CHECK(h.size == 1519792);
  CHECK(h.sha256 == "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  CHECK(h.repo_url == "http://deb.example/debian");
  CHECK(h.origin == "debian");
  CHECK(h.entry == text.substr(0, text.find("\n\n") + 1));
  const Package& c = (*r)[1];
  CHECK(c.source == "linux-headers-6.1.0-57-common");  // no Source: the package itself
  CHECK(c.arch == "all");
  CHECK(c.size == 10);
  CHECK(c.entry.back() == '\n');
  CHECK(c.entry.find("\n\n") == std::string::npos);
}

TEST_CASE("Packages stanzas that cannot be trusted to name a file are refused", "[apt]") {
  const std::string file = "http://deb.example/debian/dists/bookworm/main/binary-amd64/Packages";
  auto error_of = [&](const std::string& text) {
    auto r = apt::parse_packages(text, source(), file);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find(file) == 0);
    CHECK(r.error().message.find('\n') == std::string::npos);
    return r.error().message;
  };
  std::string ok = stanza("foo", "1.0");
  auto without = [&](const std::string& field) {
    std::string s = ok;
    auto at = s.find(field + ": ");
    return s.erase(at, s.find('\n', at) + 1 - at);
  };
  CHECK_THAT(error_of(without("Filename")), Catch::Contains("package foo has no Filename"));
  CHECK_THAT(error_of(without("SHA256")), Catch::Contains("package foo has no SHA256"));
  CHECK_THAT(error_of(without("Size")), Catch::Contains("package foo has no Size"));
  CHECK_THAT(error_of(without("Version")), Catch::Contains("package foo has no Version"));
  CHECK_THAT(error_of(stanza("foo", "1.0", "Source: linux\n") + "\n" + without("Package")),
             Catch::Contains(":9: a paragraph without a valid Package name"));
  for (const char* path : {"../../etc/passwd", "/etc/passwd", "pool/../../x.deb", "pool/./x.deb", "pool//x.deb", "pool/x y.deb", "pool/"}) {
    std::string s = ok;
    s.replace(s.find("pool/main/f/foo/foo_1.0_amd64.deb"), 33, path);
    CHECK_THAT(error_of(s), Catch::Contains("Filename '" + std::string(path) + "' is not a relative path"));
  }
  std::string bad_hash = ok;
  bad_hash.replace(bad_hash.find(std::string(64, 'a')), 64, std::string(63, 'a') + "g");
  CHECK_THAT(error_of(bad_hash), Catch::Contains("SHA256"));
  std::string bad_size = ok;
  bad_size.replace(bad_size.find("1234"), 4, "-1");
  CHECK_THAT(error_of(bad_size), Catch::Contains("Size '-1' is not a number"));
  CHECK_THAT(error_of(stanza("foo", "1.0", "Depends: bar (>= \n")), Catch::Contains("package foo: Depends:"));
  CHECK_THAT(error_of(ok + "Size: 12\n"), Catch::Contains("field 'Size' twice"));
  CHECK_THAT(error_of(" continued\n" + ok), Catch::Contains(":1: a continuation line outside a field"));
  CHECK_THAT(error_of("just words\n"), Catch::Contains("is not a 'Field: value' line"));
  std::string many;
  for (int i = 0; i < 257; ++i) many += "X-Field-" + std::to_string(i) + ": x\n";
  CHECK_THAT(error_of(ok + many), Catch::Contains(":257: more than 256 fields in one paragraph"));
  CHECK(apt::parse_packages("\n\n", source(), file)->empty());
}

namespace {

std::string release_text(const std::string& extra = "") {
  std::string h(64, 'c');
  return "Origin: Debian\nSuite: stable\nCodename: bookworm\nDate: Sat, 28 Nov 2026 10:00:00 UTC\n" + extra +
         "Architectures: amd64\nComponents: main\nSHA256:\n"
         " " + h + "   100 main/binary-amd64/Packages\n"
         " " + h + "    40 main/binary-amd64/Packages.gz\n"
         " " + h + "    30 main/binary-amd64/Packages.xz\n"
         " " + h + "    20 main/binary-arm64/Packages.gz\n"
         " " + h + "    50 contrib/binary-amd64/Packages\n";
}

}  // namespace

TEST_CASE("a Release names its suite, its expiry and its index files", "[apt]") {
  const std::string what = "http://deb.example/debian/dists/bookworm/InRelease";
  auto r = apt::parse_release(release_text("Valid-Until: Sat, 05 Dec 2026 10:00:00 UTC\n"), what);
  REQUIRE(r.ok());
  CHECK(r->suite == "stable");
  CHECK(r->codename == "bookworm");
  CHECK(r->sha256.size() == 5);
  const std::int64_t until = 1796464800;  // 2026-12-05T10:00:00Z
  REQUIRE(r->valid_until);
  CHECK(*r->valid_until == until);

  // The best compression present; plain when that is all there is.
  CHECK(apt::packages_file(*r, "main", "amd64", "debian bookworm")->path == "main/binary-amd64/Packages.xz");
  CHECK(apt::packages_file(*r, "main", "arm64", "debian bookworm")->path == "main/binary-arm64/Packages.gz");
  auto contrib = apt::packages_file(*r, "contrib", "amd64", "debian bookworm");
  CHECK(contrib->path == "contrib/binary-amd64/Packages");
  CHECK(contrib->size == 50);
  auto none = apt::packages_file(*r, "non-free", "amd64", "debian bookworm");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().kind == ErrorKind::Input);
  CHECK(none.error().message == "debian bookworm: the Release lists no Packages for component 'non-free', architecture "
                                "'amd64' (no non-free/binary-amd64/Packages in its SHA256 list)");

  // Suite or Codename must be the suite asked for; Valid-Until must lie ahead.
  CHECK(apt::check_release(*r, "bookworm", until - 1, what).ok());
  CHECK(apt::check_release(*r, "stable", until - 1, what).ok());
  auto other = apt::check_release(*r, "bookworm-updates", until - 1, what);
  REQUIRE_FALSE(other.ok());
  CHECK_THAT(other.error().message, Catch::StartsWith(what + ": is the Release of suite 'stable' (codename 'bookworm'), not of 'bookworm-updates'"));
  // A pocket sharing the Codename (Ubuntu: Suite jammy-security, Codename jammy)
  // is not the suite jammy; Debian's stable-updates for bookworm-updates is.
  apt::Release pocket = *r;
  pocket.suite = "bookworm-security";
  auto replay = apt::check_release(pocket, "bookworm", until - 1, what);
  REQUIRE_FALSE(replay.ok());
  CHECK_THAT(replay.error().message, Catch::Contains("is the Release of suite 'bookworm-security', which shares the codename 'bookworm'"));
  apt::Release updates = *r;
  updates.suite = "stable-updates";
  updates.codename = "bookworm-updates";
  CHECK(apt::check_release(updates, "bookworm-updates", until - 1, what).ok());
  auto expired = apt::check_release(*r, "bookworm", until, what);
  REQUIRE_FALSE(expired.ok());
  CHECK(expired.error().message == what + ": expired: Valid-Until 2026-12-05T10:00:00Z has passed (a stale or replayed Release)");
  auto forever = apt::parse_release(release_text(), what);
  CHECK(apt::check_release(*forever, "bookworm", until * 2, what).ok());

  CHECK_THAT(apt::parse_release(release_text("Valid-Until: someday\n"), what).error().message,
             Catch::Contains("Valid-Until 'someday' is not a date"));
  CHECK_THAT(apt::parse_release("Suite: x\nMD5Sum:\n 0 1 main/binary-amd64/Packages\n", what).error().message,
             Catch::Contains("no SHA256 list"));
  CHECK_THAT(apt::parse_release(release_text() + " " + std::string(64, 'c') + " 1 ../../etc/passwd\n", what).error().message,
             Catch::Contains("is not '<sha256> <size> <path>'"));
  CHECK_THAT(apt::parse_release(release_text() + "\nSuite: two\n", what).error().message,
             Catch::Contains("not one Release paragraph but 2"));
}

TEST_CASE("Release dates read as apt writes and reads them", "[apt]") {
  CHECK(apt::parse_release_date("Thu, 01 Jan 1970 00:00:00 UTC") == 0);
  CHECK(apt::parse_release_date("Sat, 28 Nov 2026 10:00:00 UTC") == 1795860000);
  CHECK(apt::parse_release_date("28 Nov 2026 10:00:00 GMT") == 1795860000);
  CHECK(apt::parse_release_date("Sat, 28 Nov 2026 12:00:00 +0200") == 1795860000);
  CHECK(apt::parse_release_date("Sat, 28 Nov 2026 05:30:00 -0430") == 1795860000);
  for (const char* bad : {"", "tomorrow", "Sat, 28 Foo 2026 10:00:00 UTC", "Sat, 28 Nov 2026 25:00:00 UTC",
                          "Sat, 28 Nov 2026 10:00 UTC", "Sat, 28 Nov 2026 10:00:00 CEST", "Sat, 32 Nov 2026 10:00:00 UTC"}) {
    INFO(bad);
    CHECK_FALSE(apt::parse_release_date(bad));
  }
}

namespace {

// A small Debian: a kernel's header packages from source linux and what they need.
std::vector<std::string> small_debian(const std::string& without = "") {
  std::vector<std::string> stanzas = {
      stanza("linux-headers-6.1.0-57-amd64", "6.1.192-3",
             "Source: linux\nDepends: linux-headers-6.1.0-57-common (= 6.1.192-3), linux-kbuild-6.1 (>= 6.1.192-3), "
             "linux-compiler-gcc-12-x86\n"),
      stanza("linux-headers-6.1.0-57-common", "6.1.192-3", "Source: linux\nMulti-Arch: foreign\n", "all"),
      stanza("linux-headers-6.1.0-57-common", "6.1.176-1", "Source: linux\nMulti-Arch: foreign\n", "all"),
      stanza("linux-kbuild-6.1", "6.1.192-3", "Source: linux\nDepends: libc6 (>= 2.34), libelf1 (>= 0.142)\n"),
      stanza("linux-kbuild-6.1", "6.1.176-1", "Source: linux\nDepends: libc6 (>= 2.34), libelf1 (>= 0.142)\n"),
      stanza("linux-compiler-gcc-12-x86", "6.1.192-3", "Source: linux\nDepends: gcc-12\nMulti-Arch: foreign\n"),
      stanza("gcc-12", "12.2.0-14", "Depends: cpp-12 (= 12.2.0-14), libc6 (>= 2.36)\n"),
      stanza("cpp-12", "12.2.0-14", "Depends: libc6\n"),
      stanza("libc6", "2.36-9+deb12u13", "Source: glibc\nDepends: libgcc-s1\nMulti-Arch: same\n"),
      stanza("libgcc-s1", "12.2.0-14", "Source: gcc-12\nPre-Depends: libc6 (>= 2.35)\nMulti-Arch: same\n"),
      stanza("libelf1", "0.188-2.1", "Source: elfutils\nDepends: libc6 (>= 2.34), zlib1g (>= 1:1.1.4)\n"),
      stanza("zlib1g", "1:1.2.13.dfsg-1", "Source: zlib\nDepends: libc6 (>= 2.14)\n"),
      stanza("linux-headers-6.1.0-57-arm64", "6.1.192-3", "Source: linux\n", "arm64"),  // another arch: left out
  };
  std::erase_if(stanzas, [&](const std::string& s) { return !without.empty() && s.find("Package: " + without + "\n") == 0; });
  return stanzas;
}

}  // namespace

TEST_CASE("an index holds one arch and all, each package once, from the first source that lists it", "[apt]") {
  apt::Index index("amd64");
  REQUIRE(index.add_packages(packages_text(small_debian()), source(), "Packages").ok());
  REQUIRE(index.add_packages(packages_text({stanza("zlib1g", "1:1.2.13.dfsg-1"), stanza("zlib1g", "1:1.3-1")}),
                             source("updates", "http://up.example/debian"), "updates/Packages")
              .ok());
  auto all = index.packages();
  CHECK(all.size() == 13);  // 12 of small_debian (not arm64), the newer zlib1g
  CHECK(std::none_of(all.begin(), all.end(), [](const Package& p) { return p.arch == "arm64"; }));
  CHECK(std::count_if(all.begin(), all.end(), [](const Package& p) { return p.name == "zlib1g" && p.origin == "debian"; }) == 1);
  CHECK(all.back().origin == "updates");
  CHECK(all.back().version == "1:1.3-1");
  // What libsolv would read otherwise than the checked text is refused whole.
  auto nul = index.add_packages(stanza("evil", "1", std::string("Description: x\0Depends: y\n", 26)), source(), "bad/Packages");
  REQUIRE_FALSE(nul.ok());
  CHECK(nul.error().message == "bad/Packages: package evil: a NUL byte in its entry");
  CHECK(index.packages().size() == 13);
}

TEST_CASE("the full closure follows Depends and Pre-Depends to the highest version that fits", "[apt]") {
  auto index = index_of(small_debian());
  CHECK(closure_of(index, {"linux-headers-6.1.0-57-amd64"}) ==
        std::vector<std::string>{"cpp-12=12.2.0-14", "gcc-12=12.2.0-14", "libc6=2.36-9+deb12u13", "libelf1=0.188-2.1",
                                 "libgcc-s1=12.2.0-14", "linux-compiler-gcc-12-x86=6.1.192-3",
                                 "linux-headers-6.1.0-57-amd64=6.1.192-3", "linux-headers-6.1.0-57-common=6.1.192-3",
                                 "linux-kbuild-6.1=6.1.192-3", "zlib1g=1:1.2.13.dfsg-1"});
  // Several names: one union, no duplicates, sorted by name; NAME:ARCH as apt-get takes it.
  CHECK(closure_of(index, {"zlib1g", "libelf1:amd64", "zlib1g"}) ==
        std::vector<std::string>{"libc6=2.36-9+deb12u13", "libelf1=0.188-2.1", "libgcc-s1=12.2.0-14", "zlib1g=1:1.2.13.dfsg-1"});
  // Another arch's package is not in the index the request reads.
  CHECK_THAT(resolve_error(index, {"linux-headers-6.1.0-57-arm64"}),
             Catch::Contains("no package 'linux-headers-6.1.0-57-arm64' for amd64"));
  CHECK_THAT(resolve_error(index, {"zlib1g:arm64"}), Catch::Contains("no package 'zlib1g:arm64' for amd64"));
  // Recommends and Suggests are not followed.
  auto rec = index_of({stanza("a", "1", "Recommends: b\nSuggests: c\n"), stanza("b", "1"), stanza("c", "1")});
  CHECK(closure_of(rec, {"a"}) == std::vector<std::string>{"a=1"});
}

TEST_CASE("SameSource keeps, of the full closure, the packages built from the requiring package's source", "[apt]") {
  // The kernel's own header packages, without gcc and libc.
  auto index = index_of(small_debian());
  CHECK(closure_of(index, {"linux-headers-6.1.0-57-amd64"}, Closure::SameSource) ==
        std::vector<std::string>{"linux-compiler-gcc-12-x86=6.1.192-3", "linux-headers-6.1.0-57-amd64=6.1.192-3",
                                 "linux-headers-6.1.0-57-common=6.1.192-3", "linux-kbuild-6.1=6.1.192-3"});
  // A same-source dependency that no version satisfies is an error...
  auto old = index_of({stanza("linux-headers-k", "2", "Source: linux\nDepends: linux-kbuild (>= 3)\n"),
                       stanza("linux-kbuild", "2", "Source: linux\n")});
  CHECK(resolve_error(old, {"linux-headers-k"}, Closure::SameSource) ==
        "kernel 6.1.0-57-amd64: linux-headers-k 2 needs linux-kbuild (>= 3), which none of the sources has: " + k_sources);
  // ...and so is a gap in another source's part: the full closure must solve.
  auto gap = index_of(small_debian("libelf1"));
  CHECK_THAT(resolve_error(gap, {"linux-headers-6.1.0-57-amd64"}, Closure::SameSource), Catch::Contains("needs libelf1 (>= 0.142)"));
}

TEST_CASE("alternatives: apt's pick, the next one where the first cannot be installed", "[apt]") {
  auto index = index_of({
      stanza("a", "1", "Depends: missing | b (>= 2) | c, d\n"),
      stanza("b", "1"),
      stanza("c", "1"),
      stanza("d", "1", "Depends: c | e\n"),
      stanza("e", "1"),
      stanza("f", "1", "Depends: x | y\n"),
      stanza("x", "1"),
      stanza("y", "1"),
      stanza("both", "1", "Depends: x | y, y\n"),
      stanza("alt", "1", "Depends: bad | c\n"),
      stanza("bad", "1", "Conflicts: d\n"),
      stanza("alt2", "1", "Depends: broken | c\n"),
      stanza("broken", "1", "Depends: missing\n"),
      stanza("deep", "1", "Depends: bx | c, ex\n"),
      stanza("bx", "1", "Depends: xx\n"),
      stanza("ex", "1", "Conflicts: xx\n"),
      stanza("xx", "1"),
  });
  // b is too old, so c; d's "c | e" is already met by c.
  CHECK(closure_of(index, {"a"}) == std::vector<std::string>{"a=1", "c=1", "d=1"});
  CHECK(closure_of(index, {"f"}) == std::vector<std::string>{"f=1", "x=1"});
  // y asked for meets f's "x | y".
  CHECK(closure_of(index, {"y", "f"}) == std::vector<std::string>{"f=1", "y=1"});
  // apt takes x for "x | y" before it comes to "y": both, where "y" alone would do.
  CHECK(closure_of(index, {"both"}) == std::vector<std::string>{"both=1", "x=1", "y=1"});
  // The first alternative conflicts with a package asked for, or needs what no source has: the second.
  CHECK(closure_of(index, {"alt", "d"}) == std::vector<std::string>{"alt=1", "c=1", "d=1"});
  CHECK(closure_of(index, {"alt2"}) == std::vector<std::string>{"alt2=1", "c=1"});
  // bx's own need clashes with deep's next one: the solver goes back to c.
  CHECK(closure_of(index, {"deep"}) == std::vector<std::string>{"c=1", "deep=1", "ex=1"});
}

TEST_CASE("Conflicts and Breaks that apt refuses are one-line errors naming both packages", "[apt]") {
  auto index = index_of({
      stanza("a", "1", "Conflicts: b\n"),
      stanza("b", "1"),
      stanza("x", "1", "Depends: y\n"),
      stanza("y", "1", "Breaks: z (<< 3)\n"),
      stanza("z", "2"),
      stanza("br", "1", "Breaks: old (<< 2)\n"),
      stanza("old", "1"),
      stanza("br2", "1", "Breaks: old2 (<< 2)\n"),
      stanza("old2", "1"),
      stanza("old2", "2"),
      stanza("exim", "4", "Provides: mta\nConflicts: mta\n"),  // the one MTA: conflicts with the others, not itself
      stanza("postfix", "3", "Provides: mta\nConflicts: mta\n"),
  });
  CHECK(resolve_error(index, {"a", "b"}) == "kernel 6.1.0-57-amd64: a 1 conflicts with b, but b 1 is needed too, in " + k_sources);
  CHECK(resolve_error(index, {"x", "z"}) == "kernel 6.1.0-57-amd64: y 1 breaks z (<< 3), but z 2 is needed too, in " + k_sources);
  CHECK_THAT(resolve_error(index, {"br", "old"}), Catch::Contains("br 1 breaks old (<< 2), but old 1 is needed too"));
  CHECK_THAT(resolve_error(index, {"exim", "postfix"}), Catch::Contains("conflicts with mta, but"));
  // Breaks met by the newer version: no clash.
  CHECK(closure_of(index, {"br2", "old2"}) == std::vector<std::string>{"br2=1", "old2=2"});
  CHECK(closure_of(index, {"postfix"}) == std::vector<std::string>{"postfix=3"});
  // Two versions of one package cannot both be installed.
  auto clash = index_of({stanza("a", "1", "Depends: c (= 1), b\n"), stanza("b", "1", "Depends: c (= 2)\n"),
                         stanza("c", "1"), stanza("c", "2")});
  CHECK_THAT(resolve_error(clash, {"a"}), Catch::Contains("c (= 2)"));
}

TEST_CASE("virtual packages come from Provides, versioned ones only from versioned Provides", "[apt]") {
  auto index = index_of({
      stanza("app", "1", "Depends: mail-transport-agent, libfoo-abi (>= 2)\n"),
      stanza("postfix", "3.7", "Provides: mail-transport-agent\n"),
      stanza("libfoo-old", "1", "Provides: libfoo-abi\n"),           // unversioned: cannot meet (>= 2)
      stanza("libfoo-new", "5", "Provides: libfoo-abi (= 3)\n"),
      stanza("libfoo-older", "9", "Provides: libfoo-abi (= 1)\n"),   // versioned, too old
  });
  CHECK(closure_of(index, {"app"}) == std::vector<std::string>{"app=1", "libfoo-new=5", "postfix=3.7"});
  auto none = index_of({stanza("app", "1", "Depends: libfoo-abi (>= 2)\n"), stanza("libfoo-old", "1", "Provides: libfoo-abi\n")});
  CHECK(resolve_error(none, {"app"}) ==
        "kernel 6.1.0-57-amd64: app 1 needs libfoo-abi (>= 2), which none of the sources has: " + k_sources);
  // A real package of that name wins over providers; among providers, apt's Priority order.
  auto real = index_of({stanza("app", "1", "Depends: mta\n"), stanza("mta", "1"), stanza("exim", "4", "Provides: mta\n")});
  CHECK(closure_of(real, {"app"}) == std::vector<std::string>{"app=1", "mta=1"});
  auto ranked = index_of({stanza("app", "1", "Depends: mta\n"), stanza("aaa", "1", "Provides: mta\nPriority: extra\n"),
                          stanza("exim", "4", "Provides: mta\nPriority: optional\n"),
                          stanza("zpost", "3", "Provides: mta\nPriority: important\n")});
  CHECK(closure_of(ranked, {"app"}) == std::vector<std::string>{"app=1", "zpost=3"});
}

TEST_CASE("arch qualifiers and Multi-Arch are matched as apt matches them on one arch", "[apt]") {
  auto index = index_of({
      stanza("app", "1", "Depends: python3:any, libz:amd64, tool:native\n"),
      stanza("python3", "3.11", "Multi-Arch: allowed\n"),
      stanza("perl", "5.36", "Multi-Arch: foreign\n"),
      stanza("libz", "1", "Multi-Arch: same\n"),
      stanza("tool", "1", "", "all"),  // arch all counts as the native arch
      stanza("lib", "1", "Multi-Arch: same\n"),
      stanza("needs-lib-any", "1", "Depends: lib:any\n"),
      stanza("needs-perl-any", "1", "Depends: perl:any\n"),  // :any wants Multi-Arch: allowed; foreign is not
      stanza("needs-lib-arm64", "1", "Depends: lib:arm64\n"),
      stanza("needs-virt-any2", "1", "Depends: virt:any (>= 2)\n"),
      stanza("virt-provider", "1", "Provides: virt (= 2)\nMulti-Arch: allowed\n"),
      stanza("no-clash", "1", "Conflicts: lib:any\n"),  // lib is not Multi-Arch: allowed: no lib:any
  });
  CHECK(closure_of(index, {"app"}) == std::vector<std::string>{"app=1", "libz=1", "python3=3.11", "tool=1"});
  CHECK_THAT(resolve_error(index, {"needs-lib-any"}), Catch::Contains("needs-lib-any 1 needs lib:any, which none"));
  CHECK_THAT(resolve_error(index, {"needs-perl-any"}), Catch::Contains("needs-perl-any 1 needs perl:any, which none"));
  CHECK_THAT(resolve_error(index, {"needs-lib-arm64"}), Catch::Contains("needs lib:arm64, which none"));
  CHECK(closure_of(index, {"needs-virt-any2"}) == std::vector<std::string>{"needs-virt-any2=1", "virt-provider=1"});
  CHECK(closure_of(index, {"no-clash", "lib"}) == std::vector<std::string>{"lib=1", "no-clash=1"});
}

TEST_CASE("versions in relations compare as dpkg compares them", "[apt]") {
  auto index = index_of({
      stanza("app", "1", "Depends: native (>= 1.0-0), tilde (<= 1.0a)\n"),  // 1.0 is 1.0-0; 1.0a0 is 1.0a
      stanza("native", "1.0"),
      stanza("tilde", "1.0a0"),
      stanza("obsolete", "1", "Depends: j (> 1), k (< 1)\n"),  // dpkg's obsolete > and < mean >= and <=
      stanza("j", "1"),
      stanza("k", "1"),
      stanza("vb", "1", "Depends: b (<< 2)\n"),
      stanza("b", "1"),
      stanza("b", "2"),
  });
  CHECK(closure_of(index, {"app"}) == std::vector<std::string>{"app=1", "native=1.0", "tilde=1.0a0"});
  CHECK(closure_of(index, {"obsolete"}) == std::vector<std::string>{"j=1", "k=1", "obsolete=1"});
  // apt would insist on b's newest version and fail; the solver takes the one that fits.
  CHECK(closure_of(index, {"vb"}) == std::vector<std::string>{"b=1", "vb=1"});
}

TEST_CASE("optional names are taken where a source has them, and left out where none has", "[apt]") {
  auto index = index_of(small_debian());
  FetchRequest r = request({"zlib1g"});
  r.optional_names = {"linux-headers-9.9.9-nope", "libelf1"};
  CHECK(names(index.resolve(r, {source()}).value_or_throw()) ==
        std::vector<std::string>{"libc6=2.36-9+deb12u13", "libelf1=0.188-2.1", "libgcc-s1=12.2.0-14", "zlib1g=1:1.2.13.dfsg-1"});
  r.names = {};
  r.optional_names = {"linux-headers-9.9.9-nope"};
  CHECK(index.resolve(r, {source()}).value_or_throw().empty());
}

TEST_CASE("missing packages and unsatisfiable dependencies name the package, the request and the sources", "[apt]") {
  auto index = index_of(small_debian());
  CHECK(resolve_error(index, {"linux-headers-9.9.9-nope"}) ==
        "kernel 6.1.0-57-amd64: no package 'linux-headers-9.9.9-nope' for amd64 in " + k_sources);
  auto gap = index_of(small_debian("libelf1"));
  CHECK(resolve_error(gap, {"linux-headers-6.1.0-57-amd64"}) ==
        "kernel 6.1.0-57-amd64: linux-kbuild-6.1 6.1.192-3 needs libelf1 (>= 0.142), which none of the sources has: " + k_sources);
}

TEST_CASE("a package in two sources is taken once, from the first; the highest version wins across them", "[apt]") {
  apt::Index index("amd64");
  PackageSource one = source("main", "http://one.example"), two = source("updates", "http://two.example");
  REQUIRE(index.add_packages(packages_text({stanza("a", "1", "Depends: b\n"), stanza("b", "1")}), one, "one").ok());
  REQUIRE(index.add_packages(packages_text({stanza("b", "1"), stanza("b", "2")}), two, "two").ok());
  auto r = index.resolve(request({"a"}), {one, two});
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[1].version == "2");
  CHECK((*r)[1].origin == "updates");
  CHECK((*r)[1].repo_url == "http://two.example");
  apt::Index dup("amd64");
  REQUIRE(dup.add_packages(packages_text({stanza("b", "1")}), one, "one").ok());
  REQUIRE(dup.add_packages(packages_text({stanza("b", "1")}), two, "two").ok());
  auto once = dup.resolve(request({"b"}), {});
  REQUIRE(once->size() == 1);
  CHECK(once->front().origin == "main");
  // The entry is the verified stanza, as parse_packages read it.
  CHECK(once->front().entry == stanza("b", "1"));
}
