#pragma once
// `gpubundle driver tool-image`: the image a build Job runs (issue 32): the
// gpubundle binary, the kernel build tools `driver build` runs and nothing
// else, made from Debian packages of the recipe's apt sources and written
// into the content store like any image built here.
//
//   manifest  application/vnd.oci.image.manifest.v1+json, one platform
//             (linux/amd64), no index; annotation org.opencontainers.image.created
//   config    architecture amd64, os linux, created = SOURCE_DATE_EPOCH or 0
//             Entrypoint ["/usr/local/bin/gpubundle"], WorkingDir /work,
//             Env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
//             Labels io.gpubundle.version, io.gpubundle.binary-sha256,
//                    io.gpubundle.tool-image.kernels (the recipe's, comma-separated)
//             one history entry
//   layer     one, deterministic (layer.hpp, gzip):
//     the data.tar of every package, unpacked by unpack.hpp's rules (no
//       maintainer script runs), as Debian 12's merged /usr: bin, sbin, lib,
//       lib64 are links into usr/, and what a package puts there moves below
//       usr/ (links re-aimed so they resolve as before); slim: no manual
//       pages, info, translations or docs but the copyright files
//     what the maintainer scripts would have made and the tools need:
//       tool-image.packages `alternative` links (usr/bin/cc -> gcc, awk),
//       etc/passwd (root, nobody), etc/group, tmp 1777, root 0700, work,
//       etc/ssl/certs/ca-certificates.crt when ca-certificates is in
//       (its mozilla certificates, concatenated in name order)
//     usr/local/bin/gpubundle   the binary (default: this process's own)
//     usr/share/gpubundle/tool-image.list   "<name> <version> <arch> <sha256>"
//                               per package, sorted: what the layer holds
//
// Which packages (node-images/tool-image.packages holds the lists, with why):
//   - the `package` lines: make, the shell tools kbuild's scripts use, kmod
//     (depmod), gpgv and gpg (signed package sources);
//   - the compiler and libraries of each recipe kernel's headers: what
//     linux-headers-<kernel> depends on from other sources (Debian's
//     linux-compiler-gcc-12-x86 brings gcc-12), resolved from the index;
//   - the binary's own libraries: its DT_NEEDED sonames, each mapped to its
//     package by Debian policy 8.1 (libfoo.so.N is in libfooN, libfoo1.so.2 in
//     libfoo1-2, '_' becomes '-') or a `library` line where a package is named
//     otherwise (glibc's, libcrypto's);
//   - --with extras; every name with its Depends closure (packages/apt.hpp).
// The build then checks the layer: the binary's interpreter and every soname
// it needs, and those libraries need in turn, must be in it; a miss is an
// error naming the soname (add its package with --with).
//
// Reference: localhost/gpubundle/gpubundle:<version of the binary>. With the
// same packages, binary and SOURCE_DATE_EPOCH the digest is the same. In a
// lock it is a built image of component "toolImage" (recipes/lock.hpp):
// bundles carry it and import pushes it, and the kit puts it in no values.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

namespace gb {
class CommandRunner;
class Progress;
}  // namespace gb
namespace gb::mirror {
class Store;
}

namespace gb::node_images {

inline constexpr const char* k_tool_image_repository = "localhost/gpubundle/gpubundle";
inline constexpr const char* k_tool_image_binary = "usr/local/bin/gpubundle";
inline constexpr const char* k_tool_image_platform = "linux/amd64";

// What the dynamic loader needs of an ELF executable or library.
struct ElfDeps {
  std::string interpreter;          // PT_INTERP ("/lib64/ld-linux-x86-64.so.2"), "" for a library
  std::vector<std::string> needed;  // DT_NEEDED, in file order
};
// A 64-bit little-endian ELF file's bytes; `source` names it in errors.
Result<ElfDeps> read_elf_deps(std::string_view elf, const std::string& source);

// The tool-image.packages data: `package` names, soname -> package
// exceptions, and alternative links (root-relative path -> target).
struct ToolImageCatalog {
  std::vector<std::string> packages;
  std::vector<std::pair<std::string, std::string>> libraries;     // soname, package
  std::vector<std::pair<std::string, std::string>> alternatives;  // link, target
};
const ToolImageCatalog& tool_image_catalog();
Result<ToolImageCatalog> parse_tool_image_catalog(std::string_view text, const std::string& what);

// The package holding `soname`: the catalog's exception, else Debian policy
// 8.1's name for it; "" when the soname has no version to name a package by.
std::string soname_package(const std::string& soname, const ToolImageCatalog& catalog);

class LayerBuilder;

// Every entry of an unpacked (unmerged) package tree at `root` into `layer`
// as merged /usr: bin, sbin, lib (and lib64 where a package used it) become
// links into usr/, their entries move below usr/, and a link whose own path
// or target moved is re-aimed to resolve as before. Where a path under usr/
// and a moved one meet, usr/'s wins. A path (as merged) that `keep` refuses
// is left out. Exposed for unit tests.
Result<void> add_merged_usr(LayerBuilder& layer, const std::filesystem::path& root,
                            const std::function<bool(const std::string&)>& keep = {});
// What a slim image leaves out, as Debian's -slim images do: manual pages,
// info, translations and lintian overrides, and usr/share/doc but for each
// package's copyright file.
bool tool_image_keeps(const std::string& merged_path);

struct ToolImageOptions {
  std::filesystem::path binary = "/proc/self/exe";
  std::string version;             // the binary's gpubundle version: the tag
  std::vector<std::string> with;   // --with: more packages
  std::filesystem::path work;      // scratch folder (made, then removed by the caller)
  int jobs = 4;
  Progress* progress = nullptr;
};

// The names the image starts from, before their closure: the catalog's
// packages, the binary's libraries' packages and `with`, sorted, each once.
// The kernels' compilers are not among them: they need the index.
Result<std::vector<std::string>> tool_image_names(const ToolImageOptions& options);

// VERSION of `binary --version` ("gpubundle VERSION"), as a tag spells it;
// an error when it does not run or answers otherwise.
Result<std::string> gpubundle_version_of(const std::filesystem::path& binary, CommandRunner* runner = nullptr);

struct BuiltToolImage {
  std::string ref;
  std::string digest;      // manifest digest
  std::uint64_t size = 0;  // layer, compressed
  std::uint64_t unpacked = 0;  // layer tar
  std::size_t packages = 0;

  recipes::BuiltImage built() const { return {recipes::BuiltKind::ToolImage, ref, digest, k_tool_image_platform}; }
};

// Resolves, fetches (through the store's package cache), unpacks and checks
// as the header says, then publishes the image.
Result<BuiltToolImage> build_tool_image(const recipes::Recipe& recipe, mirror::Store& store, const ToolImageOptions& options);

}  // namespace gb::node_images
