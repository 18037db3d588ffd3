// Online backups of a coordinator's database (docs/operating-onsetd.md, "Backup and restore"):
// a consistent copy taken while onsetd serves the file, which `onsetd --db COPY` serves as is.
//
// The copy is read through a read-only connection of its own with SQLite's online backup API
// in one step, so it is the database as of one commit; in WAL mode that read blocks no writer
// (leases, heartbeats and points go on; the WAL grows while the copy is read, since no
// checkpoint can pass it). It is written to a temporary file beside the destination, checked
// with PRAGMA quick_check, synced, and renamed into place, so a crash never leaves a torn file
// under the destination's name.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onset::db {

// PRAGMA quick_check of the database file at `path`, opened read-only: OK, or DataLoss with
// what it found (or the error that kept it from running), naming the file.
absl::Status QuickCheckFile(const std::string& path);

// Copies the database at `source` to `dest` (replaced if it exists). Returns the copy's size in
// bytes. Errors name the file that failed; nothing is left under `dest` or beside it then.
absl::StatusOr<int64_t> BackupDatabaseFile(const std::string& source, const std::string& dest);

// A backup of `source` into `dir` (created if missing) named onset-YYYYMMDDTHHMMSSZ.db after
// `unix_ms`, then deletes all but the newest `keep` (>= 1) files of that pattern in `dir`.
// Returns the new file's path.
absl::StatusOr<std::string> WriteRotatingBackup(const std::string& source, const std::string& dir,
                                                int keep, int64_t unix_ms);

}  // namespace onset::db
