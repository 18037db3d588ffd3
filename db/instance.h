// What a database file is (the `instance` row, migration 15): its generation, whether it is a
// backup that no coordinator has served yet, and whether claims wait after a restore.
//
// A backup's copy is stamped by the program that wrote it (`onset backup`, a rotating backup).
// The coordinator that first serves a stamped file knows it for a restore: the timeline after the
// backup was taken is lost, and workers may still run attempts the copy never heard of. It
// starts a new generation (coordinator/store/instance_store.h): the stamp goes, the generation
// grows past every one this database had (the copy's and the generation mark's beside the file),
// the attempts the copy holds open end, attempts are numbered from AttemptFloor of the new
// generation on, and no cell is claimed before claims_from_unix_ms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/instance_info.h"
#include "db/sqlite.h"

namespace onset::db {

// Attempts of generation `generation` are numbered above this: 0 for the first generation, then
// 1,000,000 per generation, so that no attempt number (nor its checkpoint directory) of one
// generation is ever one of another's (a cell would need a million attempts in one generation).
int64_t AttemptFloor(int64_t generation);

// The instance row of a database at the current schema.
absl::StatusOr<InstanceInfo> ReadInstance(Connection& db);

// The stamp of the database file at `path`, opened read-only: nullopt when it is no backup, or
// no coordinator's backup nobody served (another file, another SQLite database, a database of an
// onset without stamps). Errors only when the file cannot be read at all.
absl::StatusOr<std::optional<BackupStamp>> ReadBackupStamp(const std::string& path);

// Stamps the backup's copy at `path` (one file in rollback-journal mode, as the copy arrives).
// FailedPrecondition when it has no instance row (a copy from an onset without stamps).
absl::Status StampBackup(const std::string& path, const BackupStamp& stamp);

// The highest generation served at the database `db_path`, kept in PATH.generation beside it
// (links resolved, as the lock file is) so that it outlives the database file a restore
// replaces: 0 when there is none or it cannot be read.
int64_t ReadGenerationMark(const std::string& db_path);
// Records `generation` there, durably. Errors name the file.
absl::Status WriteGenerationMark(const std::string& db_path, int64_t generation);

}  // namespace onset::db
