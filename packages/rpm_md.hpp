#pragma once
// rpm-md repositories (RHEL, Rocky, Alma, Fedora; what createrepo_c writes
// and dnf reads), on the build machine and as the site's repository.
//
// A repo is read as dnf reads it, with the signature checked first:
//   <repo>/repodata/repomd.xml       checked against repomd.xml.asc (gpgv,
//                                    recipe keyring) before a byte is parsed
//   <data type="primary">            location href (a path below the repo),
//                                    checksum type="sha256", size and
//                                    open-checksum: the fetched bytes are
//                                    checked before they are decompressed
//   <data type="filelists">          the same checks; filelists.xml is read
//                                    (streamed, into the same packages) only
//                                    when a closure needs a file that
//                                    primary.xml's bin/ and /etc lists do
//                                    not provide, as dnf5 does by default
//   primary.xml                      read by libsolv (Debian's libsolv
//                                    0.7, the solver inside dnf) as it is
//                                    decompressed: never whole in memory, its
//                                    open-checksum checked at the end; every
//                                    package must then have an rpm name,
//                                    arch and [epoch:]version-release, a
//                                    sha256, and a location href below the
//                                    repository ending in .rpm (no xml:base,
//                                    "..", or leading /)
// Every document is read by libsolv's readers (expat), once its bytes are
// verified, and only after a check that it declares no DTD (no entity is
// ever declared, let alone expanded). The decompressed size is bounded (an
// unsigned repomd.xml's also by a ratio to the packed bytes).
// Not read: modules.yaml (RHEL 8 modularity: the Full closure picks from
// every stream, where dnf would keep to the enabled ones).
//
// The site repository (write_repo) is dnf's layout:
//   DIR/Packages/<file>.rpm
//   DIR/repodata/repomd.xml, repomd.xml.asc (armoured detached signature),
//                <type>.xml.gz            (createrepo_c --simple-md-filenames)
//   DIR/RPM-GPG-KEY-gpubundle        the signing key's public half
// for a .repo file with repo_gpgcheck=1 and gpgkey= that key.

#include <filesystem>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "packages/packages.hpp"
#include "packages/site_repo.hpp"

namespace gb {
class CommandRunner;
}
namespace gb::signing::openpgp {
class SigningKey;
}

namespace gb::packages::rpm_md {

// The verified primary.xml of every repo of a request's rpm-md sources:
// `arch` and noarch are installable, nothing else (no i686 multilib).
// resolve() solves as dnf install --installroot would on an empty root
// (Requires, rich dependencies, Conflicts and Obsoletes; weak dependencies
// not followed). A name is NAME, NAME.ARCH, NAME-[EPOCH:]VERSION
// (gcc-11.4.1), NAME-[EPOCH:]VERSION-RELEASE or that .ARCH
// (kernel-devel-5.14.0-427.13.1.el9_4.x86_64); a package named so wins over
// a version.
class Index : public PackageIndex {
public:
  explicit Index(const std::string& arch);

  // One repo's primary.xml text (load_index streams it instead); `what`
  // names the document in errors. Every package is checked as above; on an
  // error nothing of the document stays. Exposed for unit tests and fuzzing.
  Result<void> add_primary(std::string_view xml, const recipes::PackageSource& source, const std::string& repo_url,
                           const std::string& what);

  // One repo's filelists.xml text, added to the packages read from
  // `repo_url`'s primary.xml (load_filelists streams it instead).
  Result<void> add_filelists(std::string_view xml, const std::string& repo_url, const std::string& what);

  // The last resolve() failed on a file requirement, and a repo has a
  // filelists.xml not read yet: load_filelists(), then resolve() again.
  bool needs_filelists() const;

  friend Result<void> load_index(net::Transport& t, const recipes::PackageSource& source, Index& index);
  friend Result<void> load_filelists(net::Transport& t, Index& index);
};

// One <data> of repomd.xml that is read.
struct RepomdFile {
  std::string href, sha256, open_sha256;
  std::uint64_t size = 0;  // 0: not given
};
struct Repomd {
  RepomdFile primary;
  std::optional<RepomdFile> filelists;
};
// repomd.xml's primary and filelists entries, as checked above (a sha256
// checksum, a safe href, one of each). Exposed for unit tests.
Result<Repomd> parse_repomd(std::string_view xml, const std::string& what);

// Adds the verified primary.xml of each repo of `source` (source.suites below
// source.url, or url itself) to `index`.
Result<void> load_index(net::Transport& t, const recipes::PackageSource& source, Index& index);

// Adds the verified filelists.xml of every repo read that has one and whose
// list is not read yet.
Result<void> load_filelists(net::Transport& t, Index& index);

// rpm's version order (libsolv's, as rpmvercmp): epoch (absent = 0), then
// version, then release (~ sorts before anything, ^ after the end but before
// more segments). "[epoch:]version[-release]"; the release counts only when
// both have one, as in a Requires without a release. -1, 0, 1.
int compare_versions(std::string_view a, std::string_view b);

// The site's repository from verified package files, each once: the layout
// above, metadata by Debian's createrepo_c, repomd.xml signed with `key`.
// Called by packages::write_site_repo (site_repo.hpp), which checks `dir`.
// `runner` starts createrepo_c; null: system_runner() (common/process.hpp).
Result<WrittenRepo> write_repo(const std::vector<Fetched>& files, const signing::openpgp::SigningKey& key,
                               const std::filesystem::path& dir, CommandRunner* runner = nullptr);

// For repositories that sign their rpms but not repomd.xml (Red Hat's CDN,
// Fedora, EPEL publish no repomd.xml.asc): the rpm's own OpenPGP signature,
// checked by rpmkeys against `keyring` in a private rpm database, and its
// header's name, [epoch:]version-release and arch against the index's.
// Unsigned rpms and rpms signed by a key not in `keyring` are refused.
// fetch_packages() calls it for every rpm of a source with `signatures:
// packages`, whose repomd.xml need not be signed. `runner` starts gpg, rpmkeys
// and rpm; null: system_runner().
Result<void> verify_package_signature(const std::filesystem::path& keyring, const Fetched& file,
                                      CommandRunner* runner = nullptr);

// The dnf .repo file (/etc/yum.repos.d/<id>.repo) for the site repository at
// `baseurl`: repo_gpgcheck=1 against the key at `key_url` (file:// or
// http(s)://). gpgcheck=0: the signed repomd.xml already pins every rpm's
// sha256, and the site key did not sign the rpms themselves. The key can
// travel beside the .repo in the driver's repoConfig ConfigMap (mounted at
// /etc/yum.repos.d, where dnf reads only *.repo): key_url
// file:///etc/yum.repos.d/RPM-GPG-KEY-gpubundle.
std::string repo_file(const std::string& id, const std::string& baseurl, const std::string& key_url);

}  // namespace gb::packages::rpm_md
