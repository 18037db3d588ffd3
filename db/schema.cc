#include "db/schema.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "db/migrations.h"

namespace onset::db {
namespace {

// The embedded list is produced by the build; a gap or disorder is a build bug.
void CheckMigrationsContiguous() {
  const std::vector<Migration>& all = Migrations();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].version != static_cast<int>(i) + 1) {
      std::fprintf(stderr,
                   "fatal: embedded migration %zu has version %d; versions must run "
                   "1, 2, 3... (check db/CMakeLists.txt)\n",
                   i, all[i].version);
      std::abort();
    }
  }
}

absl::StatusOr<int> UserVersion(Connection* db) {
  absl::StatusOr<Statement> stmt = db->Prepare("PRAGMA user_version");
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  return *row ? static_cast<int>(stmt->Int(0)) : 0;
}

}  // namespace

int LatestSchemaVersion() {
  CheckMigrationsContiguous();
  return static_cast<int>(Migrations().size());
}

absl::Status Migrate(Connection* db) {
  const int latest = LatestSchemaVersion();
  absl::StatusOr<int> current = UserVersion(db);
  if (!current.ok()) return current.status();
  if (*current == latest) return absl::OkStatus();

  // Migrations may rebuild tables that others reference, which SQLite allows only with foreign
  // keys off (the pragma is a no-op inside a transaction, so it goes first); they are checked
  // before the commit and switched back on however this returns.
  if (absl::Status s = db->Exec("PRAGMA foreign_keys=OFF"); !s.ok()) return s;
  struct ForeignKeysBackOn {
    Connection* db;
    ~ForeignKeysBackOn() { (void)db->Exec("PRAGMA foreign_keys=ON"); }
  } back_on{db};
  absl::StatusOr<WriteTransaction> tx = WriteTransaction::Begin(db);
  if (!tx.ok()) return tx.status();
  // Re-read under the write lock: another process may have migrated meanwhile.
  current = UserVersion(db);
  if (!current.ok()) return current.status();
  if (*current > latest) {
    return absl::FailedPreconditionError(
        "database " + db->path() + " has schema version " + std::to_string(*current) +
        ", newer than this onset supports (" + std::to_string(latest) +
        "); use a newer onset or another database file");
  }
  for (const Migration& m : Migrations()) {
    if (m.version <= *current) continue;
    if (absl::Status s = db->Exec(m.sql); !s.ok()) {
      return absl::Status(s.code(), "migration " + std::to_string(m.version) + "_" + m.name + ": " +
                                        std::string(s.message()));
    }
  }
  {
    absl::StatusOr<Statement> check = db->Prepare("PRAGMA foreign_key_check");
    if (!check.ok()) return check.status();
    absl::StatusOr<bool> violation = check->Step();
    if (!violation.ok()) return violation.status();
    if (*violation) {
      return absl::InternalError("database " + db->path() + ": a migration left a row of table " +
                                 check->Text(0) + " without its parent; nothing was changed");
    }
  }
  // PRAGMA takes no parameters; the value is an integer we produced.
  if (absl::Status s = db->Exec("PRAGMA user_version = " + std::to_string(latest)); !s.ok()) {
    return s;
  }
  return tx->Commit();
}

absl::StatusOr<std::unique_ptr<Connection>> OpenDatabase(const std::string& path,
                                                         const Connection::Options& options) {
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path, options);
  if (!db.ok()) return db.status();
  if (absl::Status s = Migrate(db->get()); !s.ok()) return s;
  return db;
}

absl::StatusOr<std::unique_ptr<Connection>> OpenDatabaseReadOnly(const std::string& path,
                                                                 Connection::Options options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError("no database " + path);
  }
  options.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path, options);
  if (!db.ok()) return db.status();
  absl::StatusOr<int> version = UserVersion(db->get());
  if (!version.ok()) return version.status();
  const int latest = LatestSchemaVersion();
  if (*version > latest) {
    return absl::FailedPreconditionError(
        "database " + path + " has schema version " + std::to_string(*version) +
        ", newer than this onset reads (" + std::to_string(latest) + "); use a newer onset");
  }
  if (*version == 0) {
    return absl::FailedPreconditionError("database " + path +
                                         " holds no onset tables (schema version 0)");
  }
  if (*version < latest) {
    return absl::FailedPreconditionError(
        "database " + path + " has schema version " + std::to_string(*version) + ", older than " +
        "this onset reads (" + std::to_string(latest) + "), and reading it changes nothing: " +
        "start a coordinator on it once (`onset run FILE`, or `onsetd --db " + path +
        "`), which upgrades it, then try again");
  }
  return db;
}

}  // namespace onset::db
