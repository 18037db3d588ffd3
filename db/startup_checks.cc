#include "db/startup_checks.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <system_error>
#include <vector>

#include "db/sqlite.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;

bool InMemory(const std::string& path) {
  return path == ":memory:" || path.find("mode=memory") != std::string::npos;
}

// Refuses an existing file that holds nothing (main file and WAL empty) unless allowed.
absl::Status CheckNotEmpty(const std::string& path, const StartupCheckOptions& options) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return absl::OkStatus();  // created on open
  if (!fs::is_regular_file(status)) {
    return absl::FailedPreconditionError("database " + path +
                                         " is not a file (a directory?): name the database "
                                         "file itself");
  }
  if (fs::file_size(path, ec) != 0 || ec) return absl::OkStatus();
  if (fs::file_size(path + "-wal", ec) > 0 && !ec) return absl::OkStatus();
  if (options.allow_empty_file) {
    spdlog::warn("database {} is an empty file; starting a new database in it, as asked", path);
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      "database " + path +
      " is an empty file (0 bytes), not a database: if the studies were expected in it, it was "
      "truncated or copied badly, so restore it from a backup; to start a new database in it, "
      "start onsetd with --init-empty-db (or remove the file)");
}

bool IsCorrupt(const absl::Status& status) {
  std::optional<SqliteError> error = SqliteErrorOf(status);
  return error && (error->code & 0xff) == SQLITE_CORRUPT;
}

// The first `max` findings of PRAGMA quick_check, empty when it finds nothing.
absl::StatusOr<std::vector<std::string>> QuickCheck(Connection& db, int max) {
  std::vector<std::string> problems;
  absl::StatusOr<Statement> check =
      db.Prepare("PRAGMA quick_check(" + std::to_string(std::max(1, max)) + ")");
  if (!check.ok()) {
    // So damaged that even the schema cannot be read.
    if (!IsCorrupt(check.status())) return check.status();
    problems.push_back(SqliteErrorOf(check.status())->message);
    return problems;
  }
  while (true) {
    absl::StatusOr<bool> row = check->Step();
    if (!row.ok()) {
      // The check lists what it found, then may stop with SQLITE_CORRUPT: that is a finding too.
      if (!IsCorrupt(row.status())) return row.status();
      problems.push_back(SqliteErrorOf(row.status())->message);
      break;
    }
    if (!*row) break;
    // A row may hold several findings, one per line, under "*** in database main ***".
    std::istringstream lines(check->Text(0));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line != "ok" && line.rfind("*** in database", 0) != 0) {
        problems.push_back(line);
      }
    }
  }
  return problems;
}

absl::Status WriteProbe(Connection& db) {
  absl::StatusOr<WriteTransaction> tx = WriteTransaction::Begin(&db);
  if (!tx.ok()) return tx.status();
  absl::StatusOr<Statement> read = db.Prepare("PRAGMA user_version");
  if (!read.ok()) return read.status();
  absl::StatusOr<bool> row = read->Step();
  if (!row.ok()) return row.status();
  const int64_t version = *row ? read->Int(0) : 0;
  read->Reset();
  // PRAGMA takes no parameters; the value is the integer just read.
  if (absl::Status s = db.Exec("PRAGMA user_version = " + std::to_string(version)); !s.ok()) {
    return s;
  }
  return tx->Commit();
}

absl::Status NotWritable(const std::string& path, const std::string& why) {
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return absl::FailedPreconditionError(
      "database " + path + " cannot be written (" + why +
      "): this process must be able to write the file and its directory " + dir +
      " (SQLite creates its -wal and -shm files there); check their owner and mode, the free "
      "space, and that the filesystem is not mounted read-only");
}

absl::Status Damaged(const std::string& path, const std::string& findings) {
  return absl::DataLossError(
      "database " + path + " is damaged (PRAGMA quick_check: " + findings +
      "). onsetd does not serve it, so nothing more is lost: restore it from a backup, or "
      "salvage what is readable into a new file with `sqlite3 " +
      path + " .recover | sqlite3 NEW.db` and start on that");
}

// PRAGMA quick_check over the whole file; logs how long it took.
absl::Status CheckPages(Connection& db, const std::string& path, int max_problems) {
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::string>> problems = QuickCheck(db, max_problems);
  if (!problems.ok()) return problems.status();
  if (!problems->empty()) {
    std::string findings;
    for (const std::string& p : *problems) findings += (findings.empty() ? "" : "; ") + p;
    return Damaged(path, findings);
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  spdlog::info("database {} ({:.1f} MB) passed PRAGMA quick_check in {} ms", path,
               ec ? 0.0 : static_cast<double>(bytes) / (1024 * 1024), took.count());
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckDatabaseForServing(const std::string& path, const StartupCheckOptions& options) {
  if (InMemory(path)) return absl::OkStatus();
  if (absl::Status s = CheckNotEmpty(path, options); !s.ok()) return s;

  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
  if (!db.ok()) {
    std::optional<SqliteError> error = SqliteErrorOf(db.status());
    if (!error) return db.status();
    switch (error->code & 0xff) {
      case SQLITE_CORRUPT:
        return Damaged(path, error->message);
      case SQLITE_READONLY:  // e.g. the -wal file cannot be made in a read-only directory
      case SQLITE_CANTOPEN:
      case SQLITE_PERM:
        return NotWritable(path, error->message);
      default:
        return db.status();
    }
  }
  if ((*db)->ReadOnly()) {
    return absl::FailedPreconditionError(
        "database " + path + " is read-only for this process (user id " +
        std::to_string(geteuid()) +
        "): its mode, its owner or a read-only filesystem lets it read but not write, and onsetd "
        "writes every heartbeat and result. Make it writable (check `ls -l " +
        path +
        "`); to look at it without writing, `onset dashboard --data-dir DIR` reads DIR/onset.db");
  }

  if (options.quick_check) {
    if (absl::Status s = CheckPages(**db, path, options.max_problems); !s.ok()) return s;
  }

  // A write that changes nothing (user_version set to its own value) in a transaction of its
  // own: SQLite writes the page to the WAL as for any other commit.
  if (absl::Status wrote = WriteProbe(**db); !wrote.ok()) {
    std::optional<SqliteError> error = SqliteErrorOf(wrote);
    return NotWritable(path, error ? error->message : std::string(wrote.message()));
  }
  return absl::OkStatus();
}

}  // namespace onset::db
