// What a coordinator checks before it serves a database file, so that a file it cannot use is
// refused at start with a message saying what is wrong and what to do, instead of being served
// in a way that loses data or fails every write later:
//   - an existing file of 0 bytes (a failed copy, a truncated restore) is not taken for a new
//     database unless asked for (StartupCheckOptions::allow_empty_file): starting on it would
//     begin an empty database where the studies were expected. A missing file is created;
//   - a file that is not an SQLite database is named as such;
//   - a file this process can only read (its mode, a read-only filesystem) is refused: every
//     write would fail while reads go on working;
//   - damaged pages are looked for with PRAGMA quick_check, which reads every page once
//     (O(file size); docs/operating-onsetd.md has a measurement);
//   - one small write transaction shows that writing works (the directory must take SQLite's
//     -wal and -shm files).
// Run it while holding the database's lock (db/database_lock.h): it writes.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace onset::db {

struct StartupCheckOptions {
  // Take an existing 0-byte file for a new database (onsetd --init-empty-db).
  bool allow_empty_file = false;
  // Run PRAGMA quick_check (onsetd --skip-quick-check turns it off for a database so large
  // that reading it all at every start takes too long).
  bool quick_check = true;
  // How many of quick_check's findings the error lists at most.
  int max_problems = 5;
};

// Runs the checks above on the database file at `path` (":memory:" passes). Creates the file
// when it is missing; otherwise changes nothing of its content.
// Errors, each naming the file and saying what to do: FailedPrecondition for an empty file, a
// file that is not an SQLite database, one that cannot be written, or a path that is not a file;
// DataLoss for damaged pages (the first findings of quick_check); Internal/Unavailable for other
// SQLite errors.
absl::Status CheckDatabaseForServing(const std::string& path, const StartupCheckOptions& options);

}  // namespace onset::db
