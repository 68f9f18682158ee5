#pragma once
// Kernel packages from signed package repositories (recipe `packages.sources`).
//
// Trust runs from the recipe's keyring to every byte: the repository's signed
// index (apt InRelease / Release + Release.gpg, rpm-md repomd.xml + .asc) is
// checked with gpgv (signing/openpgp.hpp), the package lists it names are
// checked against its hashes, and every package file against the list's
// sha256 and size. Nothing unverified is returned or kept.
//
// apt.hpp and rpm_md.hpp hold the two formats; this header holds what
// they share and the one entry point, fetch_packages().

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "recipes/recipe.hpp"

namespace gb {
class Progress;
}

namespace gb::net {
class Transport;
}
namespace gb::packages::detail {
struct SolvIndex;  // packages/solver.hpp, private
}

namespace gb::packages {

// One package as the repository's signed index describes it.
struct Package {
  std::string name;     // linux-headers-6.1.0-57-amd64, kernel-devel
  std::string version;  // Debian version, or rpm [epoch:]version-release
  std::string arch;     // amd64 | all, x86_64 | noarch
  std::string source;   // apt: the Source package (Package when absent); rpm: sourcerpm
  std::string location; // path below repo_url (apt Filename, rpm-md location href)
  std::string repo_url; // apt: the archive root; rpm-md: the repo's base URL
  std::string origin;   // the recipe source's name
  std::string sha256;   // lower-case hex, from the signed index
  std::uint64_t size = 0;
  std::string entry;    // apt: the index stanza verbatim (no trailing blank line); rpm-md: empty
  std::string file_name() const;  // location's last path part
};

// A package file that passed its checks.
struct Fetched {
  Package package;
  std::filesystem::path file;
};

// Which dependencies are followed from the names asked for.
enum class Closure {
  Full,        // every Depends/Pre-Depends (apt) or Requires (rpm): what a package manager on an empty root needs
  SameSource,  // only packages built from the same source as the one that needs them: a kernel's own header packages
};

struct FetchRequest {
  std::vector<std::string> names;  // apt: package names; rpm-md: name, name-version-release or name-version-release.arch
  std::vector<std::string> optional_names;  // the same, left out where no source has them
  std::string arch;                // as the format spells it: amd64 (apt), x86_64 (rpm-md)
  Closure closure = Closure::Full;
  std::filesystem::path dest;      // files land here as <file_name>
  std::string why;                 // for errors: "kernel 6.1.0-57-amd64"
  int jobs = 4;
};

// Where verified package files are kept between builds, by sha256: the
// build's one package cache (node-images/kernel_packages.hpp puts it in the
// store's blobs, so a kernel's header artifact and the site repository share
// the bytes).
class PackageCache {
public:
  virtual ~PackageCache() = default;
  // The kept file with this sha256 (hex) and size, if any.
  virtual std::optional<std::filesystem::path> find(const std::string& sha256, std::uint64_t size) = 0;
  // Keeps a verified file; returns where it is kept. The caller may remove `file` after.
  virtual Result<std::filesystem::path> keep(const std::filesystem::path& file, const std::string& sha256,
                                             std::uint64_t size) = 0;
};

struct FetchOptions {
  std::shared_ptr<net::Transport> transport;  // curl_transport() when empty
  Progress* progress = nullptr;
  // Set: files come from the cache when it has them; fetched ones are kept
  // there once verified and returned at their cached path (request.dest is
  // then only where downloads land on the way in).
  PackageCache* cache = nullptr;
};

// What apt::Index and rpm_md::Index share: the verified package lists of a
// request's sources for one arch, in one libsolv pool. Move-only.
class PackageIndex {
public:
  ~PackageIndex();
  PackageIndex(PackageIndex&&) noexcept;
  PackageIndex& operator=(PackageIndex&&) noexcept;

  const std::string& arch() const;

  // request.names and their closure, solved as the format's header says;
  // request.optional_names only where a source has them. Closure::SameSource
  // keeps, of the Full closure, what the names need from their own source
  // package. A name no source has, or a problem the solver finds, is one
  // input error naming request.why, the packages and `sources`. Sorted by
  // name, then version.
  Result<std::vector<Package>> resolve(const FetchRequest& request, const std::vector<recipes::PackageSource>& sources);

  // Every package read, in the order read. For tests.
  std::vector<Package> packages() const;

protected:
  explicit PackageIndex(std::unique_ptr<detail::SolvIndex> impl);
  std::unique_ptr<detail::SolvIndex> m_impl;
};

// Resolves `request.names` and their closure across `sources` (all of one
// format), downloads and verifies every file. A name no source has is an
// input error naming it, `request.why` and the sources. Sorted by name.
Result<std::vector<Fetched>> fetch_packages(const std::vector<recipes::PackageSource>& sources, const FetchRequest& request,
                                            const FetchOptions& options = {});

// The second half of fetch_packages, for a caller that resolved `wanted`
// itself from an index it loaded once for several requests (the tool image,
// node-images/tool_image.hpp): each file from the cache or downloaded into
// request.dest, verified, kept in the cache. Sorted by name.
Result<std::vector<Fetched>> fetch_resolved(net::Transport& transport, const std::vector<recipes::PackageSource>& sources,
                                            std::vector<Package> wanted, const FetchRequest& request, const FetchOptions& options = {});

// --- shared by apt.cpp and rpm_md.cpp ---

// GET a small document (an index) into memory, following redirects (http ->
// https allowed, https -> http refused) and retrying transient failures. An
// error names the URL and the source; 404 or 410 is one too ("not found").
Result<std::string> get_document(net::Transport& t, const recipes::PackageSource& source, const std::string& url,
                                 std::uint64_t max_bytes);
// The same, but 404 and 410 give an empty optional (InRelease -> Release fallback).
Result<std::optional<std::string>> get_optional_document(net::Transport& t, const recipes::PackageSource& source,
                                                         const std::string& url, std::uint64_t max_bytes);
// Decompresses by magic (gzip, xz, zstd, bzip2; plain text passes through).
Result<std::string> decompress(std::string_view data, const std::string& what, std::uint64_t max_bytes);
// Downloads every package into `dest`, checking sha256 and size, atomically.
Result<std::vector<Fetched>> download(net::Transport& t, const std::vector<recipes::PackageSource>& sources,
                                      const std::vector<Package>& packages, const std::filesystem::path& dest, int jobs,
                                      Progress* progress);

}  // namespace gb::packages
