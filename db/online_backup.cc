#include "db/online_backup.h"

#include "db/snapshot_stream.h"
#include "db/sqlite.h"

namespace onset::db {

absl::Status QuickCheckFile(const std::string& path) {
  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path, read_only);
  if (!db.ok()) return db.status();
  absl::StatusOr<Statement> check = (*db)->Prepare("PRAGMA quick_check");
  if (!check.ok()) return check.status();
  absl::StatusOr<bool> row = check->Step();
  if (!row.ok()) return row.status();
  if (*row && check->Text(0) == "ok") return absl::OkStatus();
  return absl::DataLossError(
      path + " fails PRAGMA quick_check: " + (*row ? check->Text(0) : std::string("no answer")));
}

absl::StatusOr<int64_t> BackupDatabaseFile(const std::string& source, const std::string& dest,
                                           const BackupFileOptions& options,
                                           const BackupStamp& stamp) {
  absl::StatusOr<std::unique_ptr<BackupFileWriter>> writer =
      BackupFileWriter::Create(dest, options);
  if (!writer.ok()) return writer.status();
  if (absl::Status s = StreamSnapshot(source, **writer); !s.ok()) return s;
  return (*writer)->Finish(stamp);
}

}  // namespace onset::db
