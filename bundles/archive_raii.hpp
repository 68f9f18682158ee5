#pragma once
// Private to bundles/: move-only owners of libarchive handles.

#include <archive.h>
#include <archive_entry.h>
#include <memory>

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
using ArchiveWriter = std::unique_ptr<archive, ArchiveWriteFree>;
using ArchiveReader = std::unique_ptr<archive, ArchiveReadFree>;
using ArchiveEntry = std::unique_ptr<archive_entry, ArchiveEntryFree>;

}  // namespace gb::detail
