#pragma once
// apt repositories: the Debian repository format (wiki.debian.org/DebianRepository/Format),
// deb822(5) paragraphs and deb-version(7) order, read the way apt reads them.
//
// For each suite of a source, below <url>/dists/<suite>/:
//   InRelease        the Release, clearsigned; only the text gpgv says is signed is read.
//   Release(.gpg)    when InRelease is 404 or 410: the Release and its detached signature.
//   <component>/binary-<arch>/Packages{.xz,.gz,.zst,.bz2,}
//                    the one compression picked in that order from the Release's SHA256
//                    list; size and sha256 of the fetched bytes are checked against it
//                    before they are decompressed.
// Release: one paragraph. Its Suite or Codename must be the suite asked for
// (a signed Release of another suite, replayed, is refused, as apt does) and
// Valid-Until, when present, must lie ahead. SHA256 lines: "<hex> <size> <path>".
// Packages: one paragraph per package. Package, Version, Architecture,
// Filename, Size and SHA256 are required; Filename is a relative path with
// no ".." part. Source ("src" or "src (version)") defaults to Package.
//
// The closure is solved by libsolv (Debian's libsolv 0.7, repo_deb) over the
// verified entries, on an empty root, as `apt-get install
// --no-install-recommends` would: Depends and Pre-Depends are followed,
// Conflicts and Breaks honoured (a clash is an error on the build machine),
// Provides (optionally "= version") makes virtual packages; Recommends,
// Suggests and Enhances are not followed. Where there is a choice (an
// alternative "a | b", a virtual package's providers) apt's own pick, walked
// as apt's MarkInstall walks, is libsolv's preference. Versions compare as
// dpkg compares them; "name:any" is met only by Multi-Arch: allowed
// packages, ":native" and ":<arch>" by any of the one arch read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "packages/packages.hpp"

namespace gb::packages::apt {

// The verified Packages lists of a request's apt sources for one arch.
// resolve() takes NAME or NAME:ARCH, as apt-get does; its errors name each
// source by name and URL.
class Index : public PackageIndex {
public:
  explicit Index(const std::string& arch);

  // One Packages file's text (`what` names it in errors), checked by
  // parse_packages and read into the pool. Entries of another arch than
  // arch() and all are left out, as is a package (name, version, arch) read
  // before: the first source and suite to list it wins. On an error nothing
  // of the text stays.
  Result<void> add_packages(std::string_view text, const recipes::PackageSource& source, const std::string& what);
};

// Adds the verified Packages lists of every suite and component of `source`
// for index.arch() to `index`.
Result<void> load_index(net::Transport& t, const recipes::PackageSource& source, Index& index);

// Debian version order (deb-version(7), as dpkg --compare-versions): <0, 0, >0.
int compare_versions(std::string_view a, std::string_view b);

// Parses one Packages file's text (deb822 stanzas) into packages (repo_url/origin filled from source).
// `what` names the file in errors. Exposed for unit tests and fuzzing.
Result<std::vector<Package>> parse_packages(std::string_view text, const recipes::PackageSource& source, const std::string& what);

// --- the parts, exposed for unit tests ---

// One deb822 paragraph. Views point into the parsed text. A value runs from
// after "Name:" to the end of its last continuation line, trimmed; the lines
// inside keep their '\n' and leading blanks.
struct Paragraph {
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  std::string_view text;  // the paragraph's lines verbatim, each ending in '\n' except perhaps the file's last
  std::size_t line = 0;   // its first line, 1-based
  // Field names are case-insensitive.
  std::optional<std::string_view> field(std::string_view name) const;
};
// Paragraphs are separated by lines that are empty or blank. A field written
// twice in one paragraph, more than 256 fields in one, or a line that is
// neither "Name: value" nor a continuation, is an error naming `what` and the line.
Result<std::vector<Paragraph>> parse_deb822(std::string_view text, const std::string& what);

struct IndexFile {
  std::string path;  // below dists/<suite>/: main/binary-amd64/Packages.xz
  std::uint64_t size = 0;
  std::string sha256;  // lower-case hex
};

struct Release {
  std::string suite, codename;
  std::optional<std::int64_t> valid_until;  // seconds since 1970
  std::vector<IndexFile> sha256;            // the SHA256 list
};
Result<Release> parse_release(std::string_view text, const std::string& what);
// Suite or Codename is `suite`, and `now` is before Valid-Until.
Result<void> check_release(const Release& release, const std::string& suite, std::int64_t now, const std::string& what);
// The Packages list of component/arch in the best compression the Release
// lists; none is an input error (the recipe names what the repository lacks)
// naming `what` (the suite), component and arch.
Result<IndexFile> packages_file(const Release& release, const std::string& component, const std::string& arch,
                                const std::string& what);
// A Release date (RFC 2822, "Sat, 28 Nov 2026 10:00:00 UTC", also "+0000"
// or "GMT"): seconds since 1970, nothing when unreadable.
std::optional<std::int64_t> parse_release_date(std::string_view text);

enum class Op { Any, Less, LessEq, Eq, GreaterEq, Greater };
// One alternative of a relation field: "name[:arch] [(op version)]".
struct Relation {
  std::string name;
  std::string arch;  // "", "any", "native" or an architecture
  Op op = Op::Any;
  std::string version;
};
// Depends / Pre-Depends / Provides: groups separated by ',', alternatives by
// '|'. The error's message says what is wrong, without naming the field.
// parse_packages checks those fields with it; libsolv reads them for solving.
Result<std::vector<std::vector<Relation>>> parse_relations(std::string_view field);

}  // namespace gb::packages::apt
