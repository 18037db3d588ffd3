#include "db/sqlite.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/cord.h"

namespace onset::db {
namespace {

// The payload that carries SqliteError: "CODE\nMESSAGE".
constexpr char kSqliteErrorUrl[] = "type.onset.dev/db.SqliteError";

absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
      return absl::StatusCode::kUnavailable;
    case SQLITE_CONSTRAINT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_CORRUPT:
      return absl::StatusCode::kDataLoss;
    default:
      return absl::StatusCode::kInternal;
  }
}

// A status for SQLite's error `rc` (`message`: its text) on the database at `path`. `context`
// says what onset did; `prefix` starts the message ("database PATH" or "cannot open database
// PATH").
absl::Status SqliteStatus(int rc, const std::string& path, const std::string& message,
                          const std::string& prefix, const std::string& context) {
  std::string text;
  if ((rc & 0xff) == SQLITE_NOTADB) {
    text = path + " is not an SQLite database (SQLite: " + message +
           "): check that it is the file you meant; if it is, its header is damaged and the "
           "database must be restored from a backup";
  } else {
    text = prefix + ": " + message;
    if (!context.empty()) text += " (" + context + ")";
  }
  absl::Status status(CodeFor(rc), text);
  status.SetPayload(kSqliteErrorUrl, absl::Cord(std::to_string(rc) + "\n" + message));
  return status;
}

}  // namespace

std::optional<SqliteError> SqliteErrorOf(const absl::Status& status) {
  auto payload = status.GetPayload(kSqliteErrorUrl);  // absl::optional<absl::Cord>
  if (!payload) return std::nullopt;
  const std::string text(*payload);
  const size_t newline = text.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  return SqliteError{std::atoi(text.substr(0, newline).c_str()), text.substr(newline + 1)};
}

// ----- Statement -------------------------------------------------------------------------------

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_error_ = std::move(other.bind_error_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::CheckBind(int rc, int index) {
  if (rc != SQLITE_OK && bind_error_.ok()) {
    bind_error_ = db_->Error(rc, "binding parameter " + std::to_string(index) + " of '" +
                                     std::string(sqlite3_sql(stmt_)) + "'");
  }
}

Statement& Statement::Bind(int index, int64_t value) {
  CheckBind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  CheckBind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  CheckBind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
  return *this;
}

Statement& Statement::BindNull(int index) {
  CheckBind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  if (!bind_error_.ok()) return bind_error_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc, "running '" + std::string(sqlite3_sql(stmt_)) + "'");
}

absl::Status Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

void Statement::Reset() { sqlite3_reset(stmt_); }

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::Double(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (!text) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

// ----- Connection ------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path,
                                                             const Options& options) {
  sqlite3* raw = nullptr;
  const int flags =
      (options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
      SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return SqliteStatus(rc, path, message, "cannot open database " + path, "");
  }
  std::unique_ptr<Connection> db(new Connection(raw, path));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  // The file is another process's to configure; query_only makes a stray write an error.
  if (options.read_only) {
    if (absl::Status s = db->Exec("PRAGMA query_only=ON;"); !s.ok()) return s;
    return db;
  }
  if (options.keep_journal_mode) {
    if (absl::Status s = db->Exec("PRAGMA foreign_keys=ON;"); !s.ok()) return s;
    return db;
  }
  // journal_mode answers with a row ("wal", or "memory" for :memory:); Exec ignores it.
  if (absl::Status s = db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                                "PRAGMA foreign_keys=ON;");
      !s.ok()) {
    return s;
  }
  return db;
}

Connection::~Connection() {
  // All statements are finalised by their owners; close_v2 defers if any were leaked.
  sqlite3_close_v2(db_);
}

absl::Status Connection::Exec(std::string_view sql) {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string detail = message ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  // Enough of the SQL to tell what failed (a transaction's BEGIN or COMMIT, which pragma).
  constexpr size_t kShown = 60;
  std::string shown = text.size() <= kShown ? text : text.substr(0, kShown) + "...";
  return SqliteStatus(rc, path_, detail, "database " + path_, "running '" + shown + "'");
}

absl::StatusOr<Statement> Connection::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(rc, "preparing '" + std::string(sql) + "'");
  }
  return Statement(this, stmt);
}

int64_t Connection::Changes() const { return sqlite3_changes64(db_); }

bool Connection::ReadOnly() const { return sqlite3_db_readonly(db_, "main") == 1; }

absl::Status Connection::Error(int rc, std::string_view what) const {
  return SqliteStatus(rc, path_, sqlite3_errmsg(db_), "database " + path_, std::string(what));
}

// ----- WriteTransaction ------------------------------------------------------------------------

absl::StatusOr<WriteTransaction> WriteTransaction::Begin(Connection* db) {
  if (absl::Status s = db->Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  return WriteTransaction(db);
}

WriteTransaction::~WriteTransaction() {
  // A failed rollback leaves nothing better to do; the next BEGIN would report it.
  if (db_) (void)db_->Exec("ROLLBACK");
}

absl::Status WriteTransaction::Commit() {
  Connection* db = std::exchange(db_, nullptr);
  absl::Status s = db->Exec("COMMIT");
  if (!s.ok()) (void)db->Exec("ROLLBACK");
  return s;
}

}  // namespace onset::db
