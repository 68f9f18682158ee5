#pragma once
// Unpacking packages and payloads we did not make (kernel header .debs,
// kernel-devel .rpms, the installer's makeself payload) into a folder, so that
// nothing in them resolves outside it:
//   - entry paths: no absolute path, no `..`; `./` and empty parts dropped;
//   - only files, folders, symbolic links and hard links; no devices, FIFOs,
//     sockets; no setuid/setgid/sticky bits;
//   - every folder on an entry's path is opened without following links
//     (O_NOFOLLOW, one part at a time from the root's descriptor), so nothing
//     is written through a link, and an existing file is replaced, never
//     opened for writing;
//   - a symbolic link's target is kept only if it stays inside: a relative
//     target is leading `..` parts (no more than the link's depth) then plain
//     parts; an absolute one is rewritten to that relative form under the
//     root (Debian's headers link /usr/src/... by absolute path), so that by
//     induction every link resolves inside;
//   - a hard link names a file this unpacking wrote; one carrying data (cpio
//     puts a link set's data on its last entry) becomes a new file, and the
//     earlier names are linked to it, so no data goes through a link;
//   - a bound on entries and on the bytes written.
// A refusal is one line naming the package and the entry.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb::node_images {

struct UnpackLimits {
  std::uint64_t max_bytes = 16ULL << 30;  // kernel headers are ~0.3 GiB unpacked
  std::uint64_t max_entries = 1'000'000;
  // Non-empty: only these entries are written ("usr/src/kernels/K/.config",
  // as the entry path reads without "./"), with their folders; the rest is
  // read past, so one file of a package costs no disk for the others.
  std::vector<std::string> only;
};

// A Debian package's data (ar member data.tar[.gz|.xz|.zst|.bz2]).
Result<void> unpack_deb(const std::filesystem::path& deb, const std::filesystem::path& dest, const UnpackLimits& limits = {});
// An rpm's cpio payload.
Result<void> unpack_rpm(const std::filesystem::path& rpm, const std::filesystem::path& dest, const UnpackLimits& limits = {});

}  // namespace gb::node_images
