// A backup's copy written into a file as a snapshot stream (snapshot_stream.h) delivers it, by
// `onset backup` (the stream comes over gRPC) and by rotating backups (from the database
// itself). The pieces go into a temporary file beside the destination; once all have come it is
// stamped as a backup (db/instance.h), checked with PRAGMA quick_check, synced, its destination
// checked again (backup_destination.h) and only then renamed into place, so that a crash, a
// refusal or an interrupted stream never leaves a torn file under the backup's name, and a
// backup never replaces anything but an earlier backup.
//
// The disk the backup goes to keeps a reserve: the copy does not start unless, once written, at
// least `reserve_bytes` would stay free there, and it stops (removing what it wrote) when the
// free space falls under the reserve while it is written, since others (a coordinator's writes,
// on a shared disk) may need it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/backup_destination.h"
#include "db/instance.h"
#include "db/snapshot_stream.h"

namespace onset::db {

// What a backup leaves free on its disk unless told otherwise.
inline constexpr int64_t kDefaultBackupReserveBytes = int64_t{512} << 20;

struct BackupFileOptions {
  std::vector<FileIdentity> held;  // files the backup must never replace (the served database's)
  int64_t reserve_bytes = kDefaultBackupReserveBytes;
};

// Not thread-safe: one stream, one thread.
class BackupFileWriter final : public SnapshotSink {
 public:
  // Checks `dest` (CheckBackupDestination) and creates the temporary file beside it (mode 0600:
  // a copy holds everything the database does). Errors name the file.
  static absl::StatusOr<std::unique_ptr<BackupFileWriter>> Create(const std::string& dest,
                                                                  BackupFileOptions options);
  ~BackupFileWriter() override;  // removes the temporary file unless Finish succeeded
  BackupFileWriter(const BackupFileWriter&) = delete;
  BackupFileWriter& operator=(const BackupFileWriter&) = delete;

  // ResourceExhausted when the copy would leave less than the reserve free.
  absl::Status Start(const SnapshotInfo& info) override;
  // InvalidArgument for a piece outside the copy's size (a stream from elsewhere is checked);
  // ResourceExhausted when the disk's free space fell under the reserve; Internal for a failed
  // write.
  absl::Status Piece(int64_t offset, std::string_view bytes) override;

  // Once every piece has come: stamps, checks, syncs and renames the copy into place; returns its
  // size. FailedPrecondition when the copy is short of the size Start announced, or when the
  // destination became something a backup may not replace meanwhile; DataLoss when the copy
  // fails quick_check.
  absl::StatusOr<int64_t> Finish(const BackupStamp& stamp);

  const std::string& dest() const { return dest_; }

 private:
  BackupFileWriter(std::string dest, std::string partial, int fd, BackupFileOptions options)
      : dest_(std::move(dest)),
        partial_(std::move(partial)),
        fd_(fd),
        options_(std::move(options)) {}
  absl::Status CheckReserve(int64_t still_to_write) const;

  const std::string dest_;
  const std::string partial_;
  int fd_;
  const BackupFileOptions options_;
  SnapshotInfo info_;
  bool started_ = false;
  int64_t end_ = 0;          // one past the furthest byte written
  int64_t since_check_ = 0;  // bytes written since the free space was last looked at
  bool finished_ = false;
};

}  // namespace onset::db
