#include "mirror/catalog_db.hpp"

#include <ctime>
#include <set>

#include "mirror/sqlite.hpp"

namespace gb::mirror {

struct CatalogDb::Impl {
  detail::Database db;
};

CatalogDb::CatalogDb() : m_impl(std::make_unique<Impl>()) {}
CatalogDb::CatalogDb(CatalogDb&&) noexcept = default;
CatalogDb& CatalogDb::operator=(CatalogDb&&) noexcept = default;
CatalogDb::~CatalogDb() = default;

Result<CatalogDb> CatalogDb::open(const std::filesystem::path& file) {
  auto opened = detail::Database::open(file.string());
  if (!opened) return opened.error();
  CatalogDb c;
  c.m_impl->db = std::move(opened).value();
  auto& db = c.m_impl->db;
  auto at = [&](const Failure& f) -> Failure { return Failure{f.kind, file.string() + ": " + f.message}; };
  if (auto r = db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"); !r) return at(r.error());
  std::int64_t v = 0;
  {
    auto version = db.prepare("PRAGMA user_version");
    if (!version) return at(version.error());
    if (version->step() != SQLITE_ROW) return at(op_error("catalog: " + db.errmsg()));
    v = version->integer(0);
  }
  if (v > 1) return input_error(file.string() + ": catalog schema version " + std::to_string(v) + "; this gpubundle reads version 1");
  // A new file: the schema in one commit (one fsync, where a commit each
  // statement cost four); an existing one is only read.
  if (v == 0)
    if (auto r = db.exec(
            "BEGIN IMMEDIATE;"
            "CREATE TABLE IF NOT EXISTS images(ref TEXT PRIMARY KEY, digest TEXT NOT NULL, media_type TEXT NOT NULL,"
            " size INTEGER NOT NULL, source TEXT NOT NULL, platforms TEXT NOT NULL, fetched_at TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS blobs(digest TEXT PRIMARY KEY, size INTEGER NOT NULL);"
            "CREATE TABLE IF NOT EXISTS charts(name TEXT NOT NULL, version TEXT NOT NULL, file TEXT NOT NULL,"
            " sha256 TEXT NOT NULL, source TEXT NOT NULL, fetched_at TEXT NOT NULL, PRIMARY KEY(name, version));"
            "PRAGMA user_version=1;"
            "COMMIT;");
        !r) {
      (void)db.exec("ROLLBACK");
      return at(r.error());
    }
  return c;
}

Result<void> CatalogDb::record(const std::vector<ImageRow>& images, const std::vector<BlobRow>& blobs) {
  auto& db = m_impl->db;
  if (auto r = db.exec("BEGIN IMMEDIATE"); !r) return r;
  auto fail = [&](std::string msg) -> Result<void> {
    (void)db.exec("ROLLBACK");
    return op_error("catalog: " + msg);
  };
  auto img = db.prepare("INSERT OR REPLACE INTO images VALUES(?,?,?,?,?,?,?)");
  auto blob = db.prepare("INSERT OR REPLACE INTO blobs VALUES(?,?)");
  if (!img || !blob) return fail(db.errmsg());
  for (const auto& i : images) {
    img->bind_all(i.ref, i.digest, i.media_type, static_cast<std::int64_t>(i.size), i.source, i.platforms, i.fetched_at);
    if (img->step() != SQLITE_DONE) return fail(db.errmsg());
    img->reset();
  }
  for (const auto& b : blobs) {
    blob->bind_all(b.digest, static_cast<std::int64_t>(b.size));
    if (blob->step() != SQLITE_DONE) return fail(db.errmsg());
    blob->reset();
  }
  return db.exec("COMMIT");
}

Result<void> CatalogDb::record_chart(const ChartRow& c) {
  auto st = m_impl->db.prepare("INSERT OR REPLACE INTO charts VALUES(?,?,?,?,?,?)");
  if (!st) return st.error();
  st->bind_all(c.name, c.version, c.file, c.sha256, c.source, c.fetched_at);
  if (st->step() != SQLITE_DONE) return op_error("catalog: " + m_impl->db.errmsg());
  return {};
}

Result<std::vector<ImageRow>> CatalogDb::images() {
  auto st = m_impl->db.prepare("SELECT ref, digest, media_type, size, source, platforms, fetched_at FROM images ORDER BY ref");
  if (!st) return st.error();
  std::vector<ImageRow> out;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    out.push_back({st->text(0), st->text(1), st->text(2), static_cast<std::uint64_t>(st->integer(3)), st->text(4), st->text(5),
                   st->text(6)});
  }
  if (rc != SQLITE_DONE) return op_error("catalog: " + m_impl->db.errmsg());
  return out;
}

Result<std::vector<ChartRow>> CatalogDb::charts() {
  auto st = m_impl->db.prepare("SELECT name, version, file, sha256, source, fetched_at FROM charts ORDER BY name, version");
  if (!st) return st.error();
  std::vector<ChartRow> out;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) out.push_back({st->text(0), st->text(1), st->text(2), st->text(3), st->text(4), st->text(5)});
  if (rc != SQLITE_DONE) return op_error("catalog: " + m_impl->db.errmsg());
  return out;
}

Result<void> CatalogDb::prune(const std::vector<std::string>& live_refs, const std::vector<std::string>& live_blobs) {
  auto& db = m_impl->db;
  if (auto r = db.exec("BEGIN IMMEDIATE"); !r) return r;
  // Deletes the rows of `table` whose `key` is not in `live`.
  auto drop = [&](const std::string& table, const std::string& key, const std::vector<std::string>& live) -> Result<void> {
    std::set<std::string> keep(live.begin(), live.end());
    std::vector<std::string> dead;
    {
      auto st = db.prepare("SELECT " + key + " FROM " + table);
      if (!st) return st.error();
      while (st->step() == SQLITE_ROW)
        if (!keep.count(st->text(0))) dead.push_back(st->text(0));
    }
    auto del = db.prepare("DELETE FROM " + table + " WHERE " + key + " = ?");
    if (!del) return op_error("catalog: " + db.errmsg());
    for (const auto& d : dead) {
      del->bind(1, d);
      del->step();
      del->reset();
    }
    return {};
  };
  if (auto r = drop("images", "ref", live_refs); !r) return r;
  if (auto r = drop("blobs", "digest", live_blobs); !r) return r;
  return db.exec("COMMIT");
}

}  // namespace gb::mirror
