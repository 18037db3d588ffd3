#include "db/instance.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/durable_file.h"

namespace onset::db {
namespace {

constexpr int64_t kAttemptsPerGeneration = 1'000'000;

// Where the generation mark of the database at `db_path` lives: beside the file itself.
std::string MarkPath(const std::string& db_path) {
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(db_path, ec);
  return (ec || resolved.empty() ? db_path : resolved.string()) + ".generation";
}

absl::StatusOr<InstanceInfo> ReadRow(Connection& db) {
  absl::StatusOr<Statement> row = db.Prepare(
      "SELECT generation, backup_taken_unix_ms, backup_source, restored_unix_ms, "
      "COALESCE(restored_from_taken_unix_ms, 0), restored_from_source, claims_from_unix_ms "
      "FROM instance WHERE id = 1");
  if (!row.ok()) return row.status();
  absl::StatusOr<bool> found = row->Step();
  if (!found.ok()) return found.status();
  if (!*found) return absl::InternalError("database " + db.path() + " has no instance row");
  InstanceInfo info;
  info.generation = row->Int(0);
  if (!row->IsNull(1)) info.backup = BackupStamp{row->Int(1), row->Text(2)};
  if (!row->IsNull(3)) info.restored_unix_ms = row->Int(3);
  info.restored_from = BackupStamp{row->Int(4), row->Text(5)};
  info.claims_from_unix_ms = row->Int(6);
  return info;
}

}  // namespace

int64_t AttemptFloor(int64_t generation) {
  return std::max<int64_t>(generation - 1, 0) * kAttemptsPerGeneration;
}

absl::StatusOr<InstanceInfo> ReadInstance(Connection& db) { return ReadRow(db); }

absl::StatusOr<std::optional<BackupStamp>> ReadBackupStamp(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::optional<BackupStamp>();
  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path, read_only);
  if (!db.ok()) {
    // Not a database at all (a WAL, a token, a text file) is no backup.
    if (absl::IsFailedPrecondition(db.status())) return std::optional<BackupStamp>();
    return db.status();
  }
  absl::StatusOr<InstanceInfo> info = ReadRow(**db);
  // No instance table (another SQLite database, an older onset's) or not a database after all.
  if (!info.ok()) return std::optional<BackupStamp>();
  return info->backup;
}

absl::Status StampBackup(const std::string& path, const BackupStamp& stamp) {
  Connection::Options options;
  options.keep_journal_mode = true;
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path, options);
  if (!db.ok()) return db.status();
  absl::StatusOr<Statement> update = (*db)->Prepare(
      "UPDATE instance SET backup_taken_unix_ms = ?, backup_source = ? WHERE id = 1");
  if (!update.ok()) {
    return absl::FailedPreconditionError(
        "the copy " + path + " has no instance row to stamp (" +
        std::string(update.status().message()) +
        "): the coordinator that sent it is of an older onset; upgrade it");
  }
  update->BindAll(stamp.taken_unix_ms, stamp.source);
  if (absl::Status s = update->Run(); !s.ok()) return s;
  if ((*db)->Changes() != 1) {
    return absl::FailedPreconditionError("the copy " + path + " has no instance row to stamp");
  }
  return absl::OkStatus();
}

int64_t ReadGenerationMark(const std::string& db_path) {
  std::string text;
  if (base::ReadFile(MarkPath(db_path), &text)) return 0;  // none yet, or unreadable
  int64_t generation = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &generation)) return 0;
  return std::max<int64_t>(generation, 0);
}

absl::Status WriteGenerationMark(const std::string& db_path, int64_t generation) {
  const std::string path = MarkPath(db_path);
  if (std::optional<std::string> error =
          base::TryWriteFileDurably(path, absl::StrCat(generation, "\n"));
      error) {
    return absl::InternalError("cannot record the database's generation: " + *error);
  }
  return absl::OkStatus();
}

}  // namespace onset::db
