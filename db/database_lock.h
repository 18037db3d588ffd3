// One coordinator per database file. Two coordinators on one file would both lease its cells,
// and one started with --requeue-running would requeue the other's running cells while their
// workers still hold live leases. A coordinator therefore takes an exclusive lock first: flock()
// on PATH.lock beside the database, which records the holder's pid and host for the message of
// the one refused.
//
// The lock file lies beside the database file itself, links resolved: a database reached through
// a symbolic link (or a linked directory) is locked where it really is. (Two hard links to one
// file are two names the lock cannot tell apart: do not make them.)
//
// The kernel drops a flock when its process dies, however it dies (SIGKILL included), so a lock
// file left behind never blocks a restart: its presence means nothing, only the lock counts. The
// file is never removed (removing it would let two processes lock two different files).
// Readers that never write (coordinator/server/read_only_server.h, sqlite3 -readonly) take no lock.
//
// flock on NFS: Linux maps it to NFS byte-range locks, which hold between machines; keep the
// database on a local disk anyway (SQLite's WAL mode needs shared memory on one machine).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace onset::db {

class DatabaseLock {
 public:
  // PATH.lock for the database at `db_path` (as given; Acquire resolves links first).
  static std::string LockFileFor(const std::string& db_path);

  // Creates the database's directory (with parents) and its lock file if missing, and locks it
  // without waiting. The lock lasts until the object is destroyed or the process ends; the file
  // descriptor is close-on-exec, so children do not inherit it.
  // Errors: FailedPrecondition "database PATH is in use: pid N on HOST holds PATH.lock; ..." when
  // another process (or another DatabaseLock of this one) holds it; FailedPrecondition naming
  // the directory when the directory or the lock file cannot be created or written (a read-only
  // directory or filesystem, where SQLite could not create its -wal and -shm files either).
  static absl::StatusOr<std::unique_ptr<DatabaseLock>> Acquire(const std::string& db_path);

  ~DatabaseLock();
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;

  const std::string& path() const { return path_; }  // the lock file

 private:
  DatabaseLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace onset::db
