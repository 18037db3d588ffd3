// Where a backup may go: never over the database a coordinator serves, nor over any file it holds
// (its write-ahead log, shared memory, lock, generation mark, token), whatever name or link leads
// there, nor over anything that is not an earlier backup (docs/operating-onsetd.md, "Backup and
// restore"). A backup is written to a temporary file and renamed into place, and a rename replaces
// whatever the name held: so the name is checked before the copy begins and again right before
// the rename.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace onset::db {

// A file by device and inode (the same file under every name and hard link), with what it is to
// the one who holds it, for messages ("the database onsetd serves").
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  std::string what;
};

// The identity of the file at `path`, links followed; nullopt when there is none.
std::optional<FileIdentity> IdentityOf(const std::string& path, const std::string& what);

// The files a coordinator serving the database at `db_path` holds, those that exist: the
// database, PATH-wal, PATH-shm, PATH-journal, PATH.lock, PATH.generation, and `others` (with
// what each is).
std::vector<FileIdentity> HeldFiles(const std::string& db_path,
                                    const std::vector<std::pair<std::string, std::string>>& others);

// OK when a backup may be renamed to `dest`. FailedPrecondition, naming `dest` and saying what it
// is and what to do, when:
//   - it is a directory, a symbolic link, or not a regular file;
//   - it is one of `held` (compared by device and inode, so links and other names count);
//   - a process holds PATH.lock beside it (a database someone serves);
//   - it exists and is not a backup that no coordinator has served (db/instance.h): a backup
//     replaces only an earlier backup;
//   - it does not exist but is named as a database's companion file (NAME-wal, NAME-shm,
//     NAME-journal, NAME.lock, NAME.generation) of a NAME that exists.
absl::Status CheckBackupDestination(const std::string& dest, const std::vector<FileIdentity>& held);

}  // namespace onset::db
