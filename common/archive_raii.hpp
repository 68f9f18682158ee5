#pragma once
// Private header: include it from .cpp files only, never from a public
// header (it brings in <archive.h>). Move-only owners of libarchive handles,
// header-only, so common/ itself does not link libarchive.

#include <archive.h>
#include <archive_entry.h>
#include <memory>
#include <string>

namespace gb::detail {

struct ArchiveWriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ArchiveReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct ArchiveEntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
// archive_write_new() and archive_write_disk_new() both give an ArchiveWriter.
using ArchiveWriter = std::unique_ptr<archive, ArchiveWriteFree>;
using ArchiveReader = std::unique_ptr<archive, ArchiveReadFree>;
using ArchiveEntry = std::unique_ptr<archive_entry, ArchiveEntryFree>;

// archive_error_string() may return NULL (a damaged archive can say nothing):
// never put it into a std::string unguarded.
inline std::string archive_error(archive* a) {
  const char* e = archive_error_string(a);
  return e && *e ? e : "damaged or unreadable archive";
}

// The compressions of the archives we read (images' layers, charts,
// packages, payloads): built into libarchive. Never filter_all on input we
// did not make: it also bids lrzip, grzip and lzop, which libarchive runs as
// external programs.
inline void support_builtin_filters(archive* a) {
  archive_read_support_filter_gzip(a);
  archive_read_support_filter_bzip2(a);
  archive_read_support_filter_xz(a);
  archive_read_support_filter_lzma(a);
  archive_read_support_filter_zstd(a);
  archive_read_support_filter_lz4(a);
}

}  // namespace gb::detail
