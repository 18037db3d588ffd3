// InstanceStore on SQLite: the instance row (db/instance.h), the restore that starts a new
// generation, and the rotating backups' records.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "common/status_macros.h"
#include "coordinator/store/sqlite_lifecycle.h"
#include "coordinator/store/sqlite_store.h"
#include "db/instance.h"

namespace onset::coordinator {

void SqliteStore::AdoptInstance(const db::InstanceInfo& info) {
  generation_.store(info.generation, std::memory_order_relaxed);
  claims_from_unix_ms_.store(info.claims_from_unix_ms, std::memory_order_relaxed);
}

absl::StatusOr<ServingStart> SqliteStore::StartServing(int64_t highest_generation_seen,
                                                       int64_t claim_wait_ms) {
  ONSET_ASSIGN_OR_RETURN(
      ServingStart start,
      Write<ServingStart>([&](db::Connection& db) -> absl::StatusOr<ServingStart> {
        ServingStart result;
        ONSET_ASSIGN_OR_RETURN(db::InstanceInfo info, db::ReadInstance(db));
        if (!info.backup) {
          result.instance = info;
          return result;
        }
        const int64_t now = clock_.WallUnixMs();
        const int64_t generation = std::max(info.generation, highest_generation_seen) + 1;
        // Attempt numbers travel as 32-bit integers: a generation's floor must leave room for a
        // million attempts.
        if (db::AttemptFloor(generation) > std::numeric_limits<int32_t>::max() - 1'000'000) {
          return absl::FailedPreconditionError(
              "database " + db.path() + " would start generation " + std::to_string(generation) +
              ", past the last one whose attempts can be numbered; serve a copy made with "
              "`sqlite3 FILE .backup COPY` instead, which starts no new generation");
        }
        ONSET_ASSIGN_OR_RETURN(
            db::Statement update,
            db.Prepare("UPDATE instance SET generation = ?, backup_taken_unix_ms = NULL, "
                       "backup_source = '', restored_unix_ms = ?, restored_from_taken_unix_ms = ?, "
                       "restored_from_source = ?, claims_from_unix_ms = ? WHERE id = 1"));
        update.BindAll(generation, now, info.backup->taken_unix_ms, info.backup->source,
                       now + std::max<int64_t>(claim_wait_ms, 0));
        ONSET_RETURN_IF_ERROR(update.Run());
        // The attempts the copy holds open ran (or still run) in the timeline the restore lost:
        // each ends, handed back, and its cell waits for the claims to open again.
        ONSET_ASSIGN_OR_RETURN(
            db::Statement open,
            db.Prepare("SELECT cell_id, attempt FROM attempts WHERE ended_at IS NULL ORDER BY id"));
        std::vector<std::pair<int64_t, int>> attempts;
        while (true) {
          ONSET_ASSIGN_OR_RETURN(bool row, open.Step());
          if (!row) break;
          attempts.emplace_back(open.Int(0), static_cast<int>(open.Int(1)));
        }
        const std::string reason =
            "the database was restored from a backup taken before this attempt's end; the "
            "attempt belongs to the timeline the restore lost";
        const life::Context context = LifeContext(0);
        for (const auto& [cell_row, attempt] : attempts) {
          ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, cell_row));
          ONSET_ASSIGN_OR_RETURN(
              life::Step step,
              lifecycle::Apply(db, cell, life::HandBack{attempt, reason}, context));
          if (step.verdict == life::Verdict::kApplied) ++result.handed_back;
        }
        ONSET_ASSIGN_OR_RETURN(result.instance, db::ReadInstance(db));
        result.restored = true;
        return result;
      }));
  AdoptInstance(start.instance);
  return start;
}

absl::StatusOr<db::InstanceInfo> SqliteStore::Instance() {
  return Read<db::InstanceInfo>(
      [](db::Connection& db) -> absl::StatusOr<db::InstanceInfo> { return db::ReadInstance(db); });
}

absl::Status SqliteStore::RecordBackup(const db::RecordedBackup& backup) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    ONSET_ASSIGN_OR_RETURN(
        db::Statement insert,
        db.Prepare("INSERT INTO backups (path, device, inode, bytes, taken_unix_ms) "
                   "VALUES (?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET "
                   "device = excluded.device, inode = excluded.inode, "
                   "bytes = excluded.bytes, taken_unix_ms = excluded.taken_unix_ms"));
    insert.BindAll(backup.path, static_cast<int64_t>(backup.device),
                   static_cast<int64_t>(backup.inode), backup.bytes, backup.taken_unix_ms);
    return insert.Run();
  });
}

absl::StatusOr<std::vector<db::RecordedBackup>> SqliteStore::RecordedBackups() {
  return Read<std::vector<db::RecordedBackup>>(
      [](db::Connection& db) -> absl::StatusOr<std::vector<db::RecordedBackup>> {
        ONSET_ASSIGN_OR_RETURN(db::Statement rows,
                               db.Prepare("SELECT path, device, inode, bytes, taken_unix_ms FROM "
                                          "backups ORDER BY taken_unix_ms, path"));
        std::vector<db::RecordedBackup> all;
        while (true) {
          ONSET_ASSIGN_OR_RETURN(bool row, rows.Step());
          if (!row) return all;
          all.push_back({rows.Text(0), static_cast<uint64_t>(rows.Int(1)),
                         static_cast<uint64_t>(rows.Int(2)), rows.Int(3), rows.Int(4)});
        }
      });
}

absl::Status SqliteStore::ForgetBackup(const std::string& path) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    ONSET_ASSIGN_OR_RETURN(db::Statement forget, db.Prepare("DELETE FROM backups WHERE path = ?"));
    forget.BindAll(path);
    return forget.Run();
  });
}

}  // namespace onset::coordinator
