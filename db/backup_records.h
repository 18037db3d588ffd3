// The rotating backups a coordinator wrote, as the rotation (db/backup_rotation.h) records them;
// no SQLite here: the store keeps them (coordinator/store/instance_store.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onset::db {

struct RecordedBackup {
  std::string path;
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t bytes = 0;
  int64_t taken_unix_ms = 0;
};

// Where the rotation keeps its records. Implementations are thread-safe.
class BackupRecords {
 public:
  virtual ~BackupRecords() = default;
  virtual absl::Status RecordBackup(const RecordedBackup& backup) = 0;
  // Every recorded backup, oldest first.
  virtual absl::StatusOr<std::vector<RecordedBackup>> RecordedBackups() = 0;
  virtual absl::Status ForgetBackup(const std::string& path) = 0;
};

}  // namespace onset::db
