// Online backups of a coordinator's database (docs/operating-onsetd.md, "Backup and restore"):
// a consistent copy taken while onsetd serves the file, stamped as a backup, which `onsetd --db
// COPY` serves as a restore (db/instance.h).
//
// The copy is a snapshot stream (snapshot_stream.h: one read transaction of a connection of its
// own, so it is the database as of one commit and blocks no writer) written by a
// BackupFileWriter (backup_file.h: beside the destination, checked, stamped and renamed into
// place; never over anything but an earlier backup; leaving a reserve of free space). Nothing is
// written on the database's own disk unless the destination is there.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/backup_file.h"

namespace onset::db {

// PRAGMA quick_check of the database file at `path`, opened read-only: OK, or DataLoss with
// what it found (or the error that kept it from running), naming the file.
absl::Status QuickCheckFile(const std::string& path);

// Copies the database at `source` to `dest` as a backup stamped with `stamp` (its taken_unix_ms
// as given: the caller's clock at the start). Returns the copy's size in bytes. Errors name the
// file that failed and what to do; nothing is left under `dest` or beside it then.
absl::StatusOr<int64_t> BackupDatabaseFile(const std::string& source, const std::string& dest,
                                           const BackupFileOptions& options,
                                           const BackupStamp& stamp);

}  // namespace onset::db
