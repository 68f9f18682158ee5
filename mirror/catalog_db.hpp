#pragma once
// STORE/catalog.db: a sqlite3 index of what the store holds, for `store ls`
// and for later stages that want sizes and fetch times without re-reading
// every manifest. index.json stays the source of truth: rows are written last,
// after the blobs and index.json are durable, and `store gc` prunes rows whose
// content is gone. Schema (version 1, in PRAGMA user_version):
//
//   images(ref TEXT PRIMARY KEY,      -- full source reference, = index.json ref.name
//          digest TEXT, media_type TEXT, size INTEGER,   -- the top manifest or index
//          source TEXT,                -- repository it was pulled from (registry/path)
//          platforms TEXT,             -- comma-separated, e.g. "linux/amd64,linux/arm64"
//          fetched_at TEXT)            -- UTC, ISO 8601
//   blobs(digest TEXT PRIMARY KEY, size INTEGER)
//   charts(name TEXT, version TEXT, file TEXT, sha256 TEXT, source TEXT, fetched_at TEXT,
//          PRIMARY KEY(name, version))

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb::mirror {

// ImageRow::source of an image gpubundle made (driver image, node overlay).
inline constexpr const char* k_built_here = "built here";

struct ImageRow {
  std::string ref;
  std::string digest;
  std::string media_type;
  std::uint64_t size = 0;
  std::string source;
  std::string platforms;
  std::string fetched_at;
};

struct BlobRow {
  std::string digest;
  std::uint64_t size = 0;
};

struct ChartRow {
  std::string name;
  std::string version;
  std::string file;
  std::string sha256;
  std::string source;
  std::string fetched_at;
};

class CatalogDb {
public:
  static Result<CatalogDb> open(const std::filesystem::path& file);
  CatalogDb(CatalogDb&&) noexcept;
  CatalogDb& operator=(CatalogDb&&) noexcept;
  ~CatalogDb();

  // One transaction for all rows.
  Result<void> record(const std::vector<ImageRow>& images, const std::vector<BlobRow>& blobs);
  Result<void> record_chart(const ChartRow& chart);
  Result<std::vector<ImageRow>> images();
  Result<std::vector<ChartRow>> charts();
  // Drops rows whose content is no longer in the store.
  Result<void> prune(const std::vector<std::string>& live_refs, const std::vector<std::string>& live_blobs);

private:
  CatalogDb();
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gb::mirror
