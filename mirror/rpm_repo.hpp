#pragma once
// rpm-md repositories (RHEL, Rocky, Alma, Fedora; what createrepo_c writes
// and dnf reads), on the build machine and as the site's repository.
//
// A repo is read as dnf reads it, with the signature checked first:
//   <repo>/repodata/repomd.xml       checked against repomd.xml.asc (gpgv,
//                                    recipe keyring) before a byte is parsed
//   <data type="primary">            location href, checksum type="sha256",
//                                    size, open-size (and open-checksum):
//                                    the fetched bytes are checked before
//                                    they are decompressed
//   primary.xml                      one <package type="rpm"> per package:
//                                    name, arch, version epoch/ver/rel,
//                                    checksum type="sha256" (of the whole
//                                    file), size package=, location href
//                                    (no xml:base, "..", or leading /), and
//                                    in <format>: rpm:sourcerpm,
//                                    rpm:provides/rpm:requires entries
//                                    (name, flags EQ|LT|LE|GT|GE, epoch,
//                                    ver, rel; pre="1" ones count like any)
//                                    and <file> paths (provides too)
// The XML reader is a small strict one for this structure: no DOCTYPE, CDATA
// or processing instructions past the declaration; the predefined and
// numeric entities only; bounded depth and attributes.
// Not read: filelists.xml (a file requirement outside primary.xml's bin/ and
// /etc lists fails, saying so) and modules.yaml (RHEL 8 modularity: the Full
// closure picks from every stream, where dnf would keep to the enabled ones).
//
// The site repository (write_site_repo) is dnf's layout:
//   DIR/Packages/<file>.rpm
//   DIR/repodata/repomd.xml, repomd.xml.asc (armoured detached signature),
//                <type>.xml.gz            (createrepo_c --simple-md-filenames)
//   DIR/RPM-GPG-KEY-gpubundle        the signing key's public half
// for a .repo file with repo_gpgcheck=1 and gpgkey= that key.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mirror/packages.hpp"

namespace gb::openpgp {
class SigningKey;
}

namespace gb::packages::rpm_md {

// The verified index of one rpm-md source: primary.xml of each repo
// (source.suites below source.url, or url itself), entries for `arch` and
// noarch only.
Result<std::vector<Package>> load_index(http::Transport& t, const PackageSource& source, const std::string& arch);

// rpm's version order: epoch (absent = 0), then version, then release by
// rpmvercmp (~ sorts before anything, ^ after the end but before more
// segments, digits after letters). "[epoch:]version[-release]"; the release
// counts only when both have one, as in a Requires without a release.
// <0, 0, >0.
int compare_versions(std::string_view a, std::string_view b);

// request.names and their Requires closure (request.closure) from `index`
// (load_index of `sources`, which are named in errors). A name is NAME,
// NAME.ARCH, NAME-[EPOCH:]VERSION (gcc-11.4.1), NAME-[EPOCH:]VERSION-RELEASE
// or that .ARCH (kernel-devel-5.14.0-427.13.1.el9_4.x86_64). Of several
// candidates the highest version wins, then request.arch over noarch, as dnf
// picks. rpmlib() requires are rpm's own and skipped; rich dependencies
// follow `or` (first satisfiable), `and`, `if`/`unless` (decided once the
// rest of the closure is known); `with` and `without` are refused, naming
// the package. Sorted by name.
Result<std::vector<Package>> resolve(const std::vector<Package>& index, const FetchRequest& request,
                                     const std::vector<PackageSource>& sources);

// Parses primary.xml text: every package of every arch, each with its
// <package> element verbatim in Package::entry. `what` names the document
// in errors. Exposed for unit tests and fuzzing.
Result<std::vector<Package>> parse_primary(std::string_view xml, const PackageSource& source,
                                           const std::string& repo_url, const std::string& what);

// The site's repository from verified package files: the layout above,
// metadata by Debian's createrepo_c, repomd.xml signed with `key`. `dir` is
// made or emptied of an earlier repository first.
Result<void> write_site_repo(const std::vector<Fetched>& files, const openpgp::SigningKey& key,
                             const std::filesystem::path& dir);

// For repositories that sign their rpms but not repomd.xml (Red Hat's CDN,
// Fedora, EPEL publish no repomd.xml.asc): the rpm's own OpenPGP signature,
// checked by rpmkeys against `keyring` in a private rpm database, and its
// header's name, [epoch:]version-release and arch against the index's.
// Unsigned rpms and rpms signed by a key not in `keyring` are refused.
// fetch_packages() calls it for every rpm of a source with `signatures:
// packages`, whose repomd.xml need not be signed.
Result<void> verify_package_signature(const std::filesystem::path& keyring, const Fetched& file);

// The dnf .repo file (/etc/yum.repos.d/<id>.repo) for the site repository at
// `baseurl`: repo_gpgcheck=1 against the key at `key_url` (file:// or
// http(s)://). gpgcheck=0: the signed repomd.xml already pins every rpm's
// sha256, and the site key did not sign the rpms themselves. The key can
// travel beside the .repo in the driver's repoConfig ConfigMap (mounted at
// /etc/yum.repos.d, where dnf reads only *.repo): key_url
// file:///etc/yum.repos.d/RPM-GPG-KEY-gpubundle.
std::string repo_file(const std::string& id, const std::string& baseurl, const std::string& key_url);

}  // namespace gb::packages::rpm_md
