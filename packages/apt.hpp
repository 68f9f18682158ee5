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
// Depends and Pre-Depends are followed (Recommends and Suggests are not);
// Provides (optionally "= version") makes virtual packages; Multi-Arch and
// arch qualifiers (:any, :native, :amd64) are matched as dpkg does.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "packages/packages.hpp"

namespace gb::packages::apt {

// The verified index of one apt source: every Packages list of its suites and
// components for `arch` (and arch all entries in them).
Result<std::vector<Package>> load_index(net::Transport& t, const PackageSource& source, const std::string& arch);

// Debian version order (deb-version(7), dpkg's verrevcmp): <0, 0, >0.
int compare_versions(std::string_view a, std::string_view b);

// `request.names` and their dependency closure in `index` (all sources' packages together).
// Missing names or unsatisfiable dependencies: an input error naming the package, request.why and the sources (name and URL).
Result<std::vector<Package>> resolve(const std::vector<Package>& index, const FetchRequest& request,
                                     const std::vector<PackageSource>& sources);

// Parses one Packages file's text (deb822 stanzas) into packages (repo_url/origin filled from source).
// `what` names the file in errors. Exposed for unit tests and fuzzing.
Result<std::vector<Package>> parse_packages(std::string_view text, const PackageSource& source, const std::string& what);

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
  std::string suite;
  std::string codename;
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
Result<std::vector<std::vector<Relation>>> parse_relations(std::string_view field);
bool version_satisfies(std::string_view version, Op op, std::string_view wanted);

}  // namespace gb::packages::apt
