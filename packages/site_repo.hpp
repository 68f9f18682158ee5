#pragma once
// The site package repository: the kernel packages a conventional driver
// container installs (recipe packages.sources, packages/packages.hpp), as a
// signed repository that the nodes' own package manager reads. Written into a
// folder; node-images/repo_image.hpp puts that folder into an image.
//
// apt (Debian, Ubuntu):
//
//   ROOT/gpubundle-repo.asc                       the signing key's public half (armoured)
//   ROOT/pool/<file>.deb                          every package, by its file name
//   ROOT/dists/gpubundle/main/binary-<arch>/Packages     one stanza per package, sorted
//   ROOT/dists/gpubundle/main/binary-<arch>/Packages.gz  the same, gzip without a time stamp
//   ROOT/dists/gpubundle/Release                  Origin, Label, Suite and Codename gpubundle,
//                                                 Date, Architectures, Components main, SHA256
//   ROOT/dists/gpubundle/InRelease                Release, clearsigned
//   ROOT/dists/gpubundle/Release.gpg              Release, detached armoured signature
//
// A Packages stanza is the upstream index entry verbatim (its SHA256 and Size
// are what the upstream archive signed) with only Filename: rewritten to
// pool/<file>. "Architecture: all" packages appear under every architecture.
// Release has no Valid-Until: across an air gap it must never expire. Date is
// SOURCE_DATE_EPOCH (or 0), so the same packages and key give the same bytes
// (an Ed25519 signature is deterministic too). A site trusts the key once:
// `sources.list` names it with signed-by, never trusted=yes.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "packages/packages.hpp"

namespace gb::signing::openpgp {
class SigningKey;
}

namespace gb::packages {

// One index file of a repository and its bytes, path relative to dists/<suite>/.
struct IndexFile {
  std::string path;  // main/binary-amd64/Packages
  std::string bytes;
};

// Packages for `arch`: the stanzas of the packages built for it or for all,
// sorted by name, version and architecture, Filename rewritten to pool/.
// Input errors: a stanza without Filename, two files of one name that differ.
Result<std::string> apt_packages(const std::vector<Package>& packages, const std::string& arch);

// The Release text over `indexes` for `archs`, dated `date` (seconds).
std::string apt_release(const std::vector<IndexFile>& indexes, const std::vector<std::string>& archs, std::int64_t date);

// "Tue, 01 Dec 2026 19:00:00 UTC" (RFC 2822, as apt writes Date).
std::string rfc2822_utc(std::int64_t seconds);

struct WrittenRepo {
  std::filesystem::path root;
  std::size_t packages = 0;      // distinct package files
  std::uint64_t bytes = 0;       // of the package files
  std::string release_sha256;    // hex, of the signed index (apt dists/gpubundle/Release, rpm-md
                                 // repodata/repomd.xml): names the repository's content
};

// Writes the site repository of `format` for `fetched` and `archs` (amd64,
// arm64; apt only, rpm-md keeps each rpm's own) into `root`, which must not
// exist yet, signed with `key`. apt: the layout above, files deduplicated by
// name and hard-linked from where they were fetched when the file system
// allows; rpm-md: packages/rpm_md.hpp's layout, through createrepo_c.
Result<WrittenRepo> write_site_repo(recipes::PackageFormat format, const std::vector<Fetched>& fetched,
                                    const std::vector<std::string>& archs, const signing::openpgp::SigningKey& key,
                                    const std::filesystem::path& root);

}  // namespace gb::packages
