#pragma once
// The NVIDIA installer as input: a makeself `.run` (never executed) or a
// folder already extracted from one.
//
// makeself header (docs: shared/docs/oci-protocol.md §7):
//   upstream makeself 2.x   `skip="N"` near the top; the payload starts AFTER
//                           line N (offset = bytes of the first N lines);
//                           `filesizes="S..."` gives the payload size(s).
//   NVIDIA fork 1.6.0-nvN   `skip=N` on line 4, `skip_decompress=`,
//                           `size_decompress=`, `version_string=` ...; the
//                           archive starts AT line N (`tail -n +$skip`).
// Compression is sniffed from magic bytes (gzip, xz, zstd, bzip2, plain tar),
// never taken from the header's version.
//
// `.manifest` (contract doc §5.1): lines 1-8 are the header (1 description,
// 2 version, 4 the kernel module names), then one entry per line until the
// first empty line:
//   <file> <octal mode> <TYPE> [NATIVE|COMPAT32] [path | INHERIT_PATH_DEPTH:n] [symlink target] [ignored...]
// Which optional fields a TYPE carries comes from nvidia-installer's type
// table (manifest.c); an unknown TYPE rejects the whole manifest, as
// nvidia-installer does. INHERIT_PATH_DEPTH:n strips n leading folders from
// the file's own folder, so n may not exceed the folders it has.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::node_images {

enum class MakeselfFlavour { Upstream, NvidiaFork };
enum class PayloadCompression { Gzip, Xz, Zstd, Bzip2, None };

std::string_view to_string(MakeselfFlavour f);
std::string_view to_string(PayloadCompression c);

struct MakeselfHeader {
  MakeselfFlavour flavour = MakeselfFlavour::Upstream;
  std::uint64_t payload_offset = 0;  // first byte of the archive
  std::uint64_t payload_size = 0;    // 0: to the end of the file
  std::uint64_t file_size = 0;
  PayloadCompression compression = PayloadCompression::None;
  std::string label;
};

// Reads only the header and the payload's first bytes. `bytes` is the whole
// file or at least its first 64 KiB plus the payload magic.
Result<MakeselfHeader> parse_makeself_header(std::string_view bytes, std::uint64_t file_size,
                                             const std::string& source);
Result<MakeselfHeader> read_makeself_header(const std::filesystem::path& run);

// Extracts the payload into `dest` (created; must not exist or be empty).
// Entries that are absolute, climb out with "..", or are devices are refused.
Result<void> extract_makeself(const std::filesystem::path& run, const MakeselfHeader& header,
                              const std::filesystem::path& dest);

struct ManifestEntry {
  std::string file;  // relative to the extracted folder
  unsigned mode = 0644;
  std::string type;  // e.g. UTILITY_LIB
  std::string arch;  // NATIVE | COMPAT32 | ""
  std::string path;  // explicit path, "" when none
  int inherit_depth = -1;
  std::string symlink_target;
  int line = 0;
};

struct InstallerManifest {
  std::string description;
  std::string version;
  std::vector<std::string> modules;  // line 4: nvidia nvidia-uvm ...
  std::vector<ManifestEntry> entries;
};

Result<InstallerManifest> parse_manifest(std::string_view text, const std::string& source);

// Where an entry goes on the target root ("usr/bin/nvidia-smi", no leading
// slash), or nullopt when a headless compute node does not need it (sources,
// docs, X/graphics files, 32-bit compat). Destinations follow nvidia-installer's
// set_destinations: <libdir>/<path>/name for CUDA_*, OPENCL_*, GRID_* and
// FLEXERA_* (the vGPU guest's licensing libraries), <libdir>/name for
// UTILITY_*, NVCUVID_*, ENCODEAPI_* and VGX_*, <path>/name for NVIDIA_MODPROBE.
// libdir e.g. "usr/lib/x86_64-linux-gnu".
std::optional<std::string> manifest_destination(const ManifestEntry& e, const std::string& version,
                                                const std::string& libdir);

struct Installer {
  std::filesystem::path root;  // the extracted folder
  InstallerManifest manifest;
  std::string source;          // what the user named
  std::string sha256;          // of the .run; "" for a folder
  std::optional<MakeselfHeader> header;
};

// A .run is extracted into sandbox/installer; a folder is used in place.
Result<Installer> open_installer(const std::filesystem::path& run_or_dir, const std::filesystem::path& sandbox);

}  // namespace gb::node_images
