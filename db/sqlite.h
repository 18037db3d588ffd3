// A thin RAII layer over the sqlite3 C API: a connection opened with onset's pragmas, prepared
// statements with positional binding, and a BEGIN IMMEDIATE transaction guard. Every failure is
// an absl::Status whose message names the database file, and which carries SQLite's own error
// (SqliteErrorOf) for callers that report it in their own words.
//
// Status codes of SQLite errors: Unavailable for what passes by itself or by freeing space
// (SQLITE_BUSY, SQLITE_LOCKED: another connection holds the lock; SQLITE_FULL: the disk is full);
// FailedPrecondition for SQLITE_CONSTRAINT and SQLITE_NOTADB (a file that is not an SQLite
// database, whose message says so); DataLoss for SQLITE_CORRUPT; Internal for everything else
// (SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PERM, ...), which no retry mends.
//
// SQL text is written in the source, never built from values: every value, above all one that
// came over the network (study names, cell ids, lease ids, metric names), is bound to a `?`.
//
// Thread-safety: a Connection and its Statements belong to one thread at a time; callers that
// share one serialise access (e.g. with a mutex).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onset::db {

class Connection;

// SQLite's error behind a status this file returned: its extended result code (e.g.
// SQLITE_READONLY_DBMOVED) and sqlite3_errmsg's text without onset's context ("attempt to write a
// readonly database").
struct SqliteError {
  int code = 0;
  std::string message;
};
// The SqliteError a status carries: set on every status of a failed SQLite call made through this
// file, kept by copies of the status (not by a new status made from its message). nullopt for
// other statuses.
std::optional<SqliteError> SqliteErrorOf(const absl::Status& status);

// A prepared statement. Movable; finalised on destruction. Bind indices start at 1, column
// indices at 0.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Statement& Bind(int index, double value);  // NaN is stored as NULL by SQLite
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, const std::string& value) {
    return Bind(index, std::string_view(value));
  }
  Statement& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Statement& BindNull(int index);
  template <typename T>
  Statement& Bind(int index, const std::optional<T>& value) {
    return value ? Bind(index, *value) : BindNull(index);
  }

  // Binds the arguments to parameters 1..N.
  template <typename... Args>
  Statement& BindAll(const Args&... args) {
    int index = 0;
    (Bind(++index, args), ...);
    return *this;
  }

  // Advances: true when a row is available, false when the statement is done.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows.
  absl::Status Run();
  // Makes the statement ready to run again; bindings are kept.
  void Reset();

  bool IsNull(int column) const;
  int64_t Int(int column) const;
  double Double(int column) const;
  std::string Text(int column) const;

 private:
  friend class Connection;
  Statement(Connection* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  void CheckBind(int rc, int index);

  Connection* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  absl::Status bind_error_;  // first binding failure, reported by Step()
};

class Connection {
 public:
  struct Options {
    int busy_timeout_ms = 5000;  // how long a write waits for another connection's lock
    // Open the file read-only (SQLITE_OPEN_READONLY and query_only): it must exist, nothing is
    // created or changed, not even the journal mode. A WAL database's -wal and -shm files are
    // still shared with its writers, so reads see their commits.
    bool read_only = false;
    // Leave the file's journal mode as its header says (a backup's copy is one file in
    // rollback-journal mode and stays so) and set no pragma besides busy_timeout and
    // foreign_keys; for files that are not served.
    bool keep_journal_mode = false;
  };

  // Opens `path`, creating the file if missing (not its directory); ":memory:" gives a private
  // in-memory database. Applies journal_mode=WAL, synchronous=NORMAL, foreign_keys=ON and
  // busy_timeout (read_only: busy_timeout only). Errors (codes as above) name the file;
  // FailedPrecondition "PATH is not an SQLite database" for a file of something else.
  // A file this process may not write (its mode, or a read-only filesystem) opens read-only
  // without an error, as SQLite does: ReadOnly() tells.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& path,
                                                          const Options& options);
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& path) {
    return Open(path, Options());
  }
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements that take no parameters (pragmas, migrations, transactions).
  absl::Status Exec(std::string_view sql);
  absl::StatusOr<Statement> Prepare(std::string_view sql);

  int64_t Changes() const;
  const std::string& path() const { return path_; }
  // Whether SQLite opened the file read-only (asked for, or all this process may do).
  bool ReadOnly() const;

  // A status for the connection's latest error code/message, prefixed with `what`.
  absl::Status Error(int rc, std::string_view what) const;

  // The SQLite handle, for the C APIs this layer does not wrap (the online backup of
  // db/snapshot_stream.cc). The connection keeps owning it.
  sqlite3* handle() const { return db_; }

 private:
  Connection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// A write transaction: BEGIN IMMEDIATE takes the write lock up front, so concurrent writers
// wait in busy_timeout instead of failing on upgrade. Rolls back unless Commit() succeeded.
class WriteTransaction {
 public:
  static absl::StatusOr<WriteTransaction> Begin(Connection* db);
  WriteTransaction(WriteTransaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  WriteTransaction& operator=(WriteTransaction&&) = delete;
  ~WriteTransaction();

  absl::Status Commit();

 private:
  explicit WriteTransaction(Connection* db) : db_(db) {}
  Connection* db_;  // null once committed, rolled back or moved from
};

}  // namespace onset::db
