#include "util/diskcache.h"

#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <mutex>

#include "util/settings.h"

namespace tg {

namespace {

constexpr int kVersion = 1;  // bump when the stored formats change

struct Db {
  std::mutex mu;
  std::string path;
  sqlite3* db = nullptr;
  bool broken = false;  // open failed or the file is not a database: stop trying for this path
  DiskCacheStats stats;

  void close() {
    if (db) sqlite3_close_v2(db);
    db = nullptr;
  }
  void fail(const char* what) {
    stats.errors++;
    int rc = db ? sqlite3_errcode(db) : SQLITE_CANTOPEN;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) return;  // try again next time
    if (!broken && settings().DEBUG >= 1)
      std::fprintf(stderr, "tinygrad.cpp: disk cache %s disabled (%s: %s)\n", path.c_str(), what, db ? sqlite3_errmsg(db) : "cannot open");
    broken = true;
    close();
  }
  // the open connection for the current $CACHEDB, or nullptr
  sqlite3* get() {
    const std::string& want = cachedb_path();
    if (want != path) close(), path = want, broken = false;
    if (db || broken) return db;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
      fail("open");
      return nullptr;
    }
    sqlite3_busy_timeout(db, 2000);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);  // may fail while another connection sets it
    if (sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr) != SQLITE_OK) {
      fail("setup");
      return nullptr;
    }
    return db;
  }
};

Db& the_db() {
  static Db& d = *new Db();  // outlives static destructors that may still compile
  return d;
}

std::string table_name(std::string_view table) { return "\"" + std::string(table) + "_v" + std::to_string(kVersion) + "\""; }

}  // namespace

const std::string& cachedb_path() { return settings().CACHEDB; }

std::optional<std::string> diskcache_get(std::string_view table, std::string_view key) {
  if (settings().CACHELEVEL < 1) return std::nullopt;
  Db& d = the_db();
  std::lock_guard lk(d.mu);
  sqlite3* db = d.get();
  if (!db) return std::nullopt;
  std::string sql = "SELECT val FROM " + table_name(table) + " WHERE key=?";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    // a missing table is a plain miss; anything else (corrupt file, locked) is an error
    if (std::string_view(sqlite3_errmsg(db)).starts_with("no such table")) d.stats.misses++;
    else d.fail("read");
    return std::nullopt;
  }
  sqlite3_bind_text(st, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
  std::optional<std::string> out;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    auto p = static_cast<const char*>(sqlite3_column_blob(st, 0));
    out = std::string(p ? p : "", size_t(sqlite3_column_bytes(st, 0)));
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) d.fail("read");
  else out ? d.stats.hits++ : d.stats.misses++;
  return out;
}

void diskcache_put(std::string_view table, std::string_view key, std::string_view val) {
  if (settings().CACHELEVEL < 1) return;
  Db& d = the_db();
  std::lock_guard lk(d.mu);
  sqlite3* db = d.get();
  if (!db) return;
  std::string create = "CREATE TABLE IF NOT EXISTS " + table_name(table) + " (key TEXT PRIMARY KEY, val BLOB)";
  if (sqlite3_exec(db, create.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return d.fail("create");
  std::string sql = "REPLACE INTO " + table_name(table) + " (key, val) VALUES (?, ?)";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return d.fail("write");
  sqlite3_bind_text(st, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
  sqlite3_bind_blob(st, 2, val.data(), int(val.size()), SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return d.fail("write");
  d.stats.puts++;
}

DiskCacheStats diskcache_stats() {
  Db& d = the_db();
  std::lock_guard lk(d.mu);
  return d.stats;
}

}  // namespace tg
