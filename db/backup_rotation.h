// Rotating backups (onsetd --backup-every): a backup into a directory on a period, named
// onset-YYYYMMDDTHHMMSSZ.db, keeping the newest N. The rotation deletes only what it wrote: every
// backup it writes is recorded (BackupRecords: in the served database itself), and an older one
// is deleted only while it is still that file (device and inode), still a backup that no
// coordinator has served (db/instance.h: serving a backup clears its stamp), and not one of the
// files the coordinator holds. A file that matches none of this is never deleted, whatever its
// name: a backup an operator serves where it lies, a file someone else put there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/backup_file.h"
#include "db/backup_records.h"

namespace onset::db {

struct RotationResult {
  std::string path;  // the new backup
  int64_t bytes = 0;
  std::vector<std::string> deleted;  // older backups deleted
  std::vector<std::string> spared;   // recorded ones left in place, each with why
};

// One rotation step at `unix_ms`: a backup of `source` into `dir` (created if missing), recorded,
// then all but the newest `keep` (>= 1) recorded backups in `dir` deleted under the rules above
// (and their records forgotten, spared ones too: they are no longer the rotation's). `stamp_source`
// says which coordinator took it.
absl::StatusOr<RotationResult> RotateBackup(const std::string& source, const std::string& dir,
                                            int keep, int64_t unix_ms,
                                            const std::string& stamp_source,
                                            const BackupFileOptions& options,
                                            BackupRecords& records);

}  // namespace onset::db
