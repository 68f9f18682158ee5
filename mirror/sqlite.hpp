#pragma once
// Private to mirror/: tiny move-only RAII wrappers over sqlite3* and
// sqlite3_stmt*. Nothing outside catalog_db.cpp includes this header.

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.hpp"

namespace gb::mirror::detail {

class Statement {
public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* s) : m_stmt(s) {}
  Statement(Statement&& o) noexcept : m_stmt(std::exchange(o.m_stmt, nullptr)) {}
  Statement& operator=(Statement&& o) noexcept {
    std::swap(m_stmt, o.m_stmt);
    return *this;
  }
  Statement(const Statement&) = delete;
  ~Statement() {
    if (m_stmt) sqlite3_finalize(m_stmt);
  }

  void bind(int i, std::string_view v) { sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(m_stmt, i, v); }
  // Binds the values to parameters 1, 2, ...
  template <typename... V>
  void bind_all(const V&... v) {
    int i = 0;
    (bind(++i, v), ...);
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(m_stmt); }
  void reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }
  std::string text(int col) const {
    auto p = sqlite3_column_text(m_stmt, col);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(m_stmt, col); }

private:
  sqlite3_stmt* m_stmt = nullptr;
};

class Database {
public:
  Database() = default;
  Database(Database&& o) noexcept : m_db(std::exchange(o.m_db, nullptr)) {}
  Database& operator=(Database&& o) noexcept {
    std::swap(m_db, o.m_db);
    return *this;
  }
  Database(const Database&) = delete;
  ~Database() {
    if (m_db) sqlite3_close(m_db);
  }

  static Result<Database> open(const std::string& path) {
    Database d;
    int rc = sqlite3_open_v2(path.c_str(), &d.m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
    if (rc != SQLITE_OK) return op_error(path + ": cannot open catalog: " + (d.m_db ? sqlite3_errmsg(d.m_db) : "out of memory"));
    sqlite3_busy_timeout(d.m_db, 5000);
    return d;
  }
  Result<void> exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      return op_error("catalog: " + msg);
    }
    return {};
  }
  Result<Statement> prepare(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(m_db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) return op_error(std::string("catalog: ") + sqlite3_errmsg(m_db));
    return Statement(s);
  }
  std::string errmsg() const { return sqlite3_errmsg(m_db); }

private:
  sqlite3* m_db = nullptr;
};

}  // namespace gb::mirror::detail
