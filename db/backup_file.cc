#include "db/backup_file.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/durable_file.h"
#include "db/online_backup.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;

// The free space is looked at again after this many bytes written.
constexpr int64_t kReserveCheckBytes = int64_t{64} << 20;

std::string DirOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string Mib(int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

absl::Status SyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(path + ": cannot open to sync: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) return absl::InternalError(path + ": fsync failed: " + std::strerror(saved));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<BackupFileWriter>> BackupFileWriter::Create(
    const std::string& dest, BackupFileOptions options) {
  if (absl::Status s = CheckBackupDestination(dest, options.held); !s.ok()) return s;
  const std::string partial = base::UniqueTempName(dest);
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError("cannot create " + partial +
                                         " for the backup: " + std::strerror(errno));
  }
  return std::unique_ptr<BackupFileWriter>(
      new BackupFileWriter(dest, partial, fd, std::move(options)));
}

BackupFileWriter::~BackupFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_) {
    std::error_code ec;
    for (const char* suffix : {"", "-journal"}) fs::remove(partial_ + suffix, ec);
  }
}

absl::Status BackupFileWriter::CheckReserve(int64_t still_to_write) const {
  struct statvfs fs_info {};
  const std::string dir = DirOf(dest_);
  if (::statvfs(dir.c_str(), &fs_info) != 0) {
    return absl::InternalError("cannot tell the free space of " + dir + ": " +
                               std::strerror(errno));
  }
  const int64_t free_bytes =
      static_cast<int64_t>(fs_info.f_bavail) * static_cast<int64_t>(fs_info.f_frsize);
  if (free_bytes - still_to_write >= options_.reserve_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      "the backup to " + dest_ + " " +
      (still_to_write > 0 ? "needs " + Mib(still_to_write) + " more" : std::string("was written")) +
      " and " + dir + " has " + Mib(free_bytes) + " free, of which " + Mib(options_.reserve_bytes) +
      " stay free for others (the reserve): write it to a disk with more room, or free space; "
      "nothing was kept");
}

absl::Status BackupFileWriter::Start(const SnapshotInfo& info) {
  if (started_) return absl::InternalError("the backup's copy started twice");
  if (info.bytes <= 0 || info.page_size < 0) {
    return absl::InvalidArgumentError("the backup's copy announced an impossible size");
  }
  info_ = info;
  started_ = true;
  return CheckReserve(info.bytes);
}

absl::Status BackupFileWriter::Piece(int64_t offset, std::string_view bytes) {
  if (!started_) return absl::InvalidArgumentError("a piece of the copy came before its size");
  const auto size = static_cast<int64_t>(bytes.size());
  if (offset < 0 || offset + size > info_.bytes) {
    return absl::InvalidArgumentError("a piece of the copy at offset " + std::to_string(offset) +
                                      " lies outside its " + std::to_string(info_.bytes) +
                                      " bytes");
  }
  if (since_check_ >= kReserveCheckBytes) {
    since_check_ = 0;
    if (absl::Status s = CheckReserve(std::max<int64_t>(info_.bytes - end_, 0)); !s.ok()) {
      return s;
    }
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError("cannot write " + partial_ + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  end_ = std::max(end_, offset + size);
  since_check_ += size;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> BackupFileWriter::Finish(const BackupStamp& stamp) {
  if (!started_ || end_ != info_.bytes) {
    return absl::FailedPreconditionError("the backup's copy ended after " + std::to_string(end_) +
                                         " of its " + std::to_string(info_.bytes) +
                                         " bytes; nothing was written to " + dest_);
  }
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    return absl::InternalError("cannot sync " + partial_ + ": " + std::strerror(errno));
  }
  fd_ = -1;
  if (absl::Status s = StampBackup(partial_, stamp); !s.ok()) return s;
  if (absl::Status s = QuickCheckFile(partial_); !s.ok()) return s;
  if (absl::Status s = SyncPath(partial_, false); !s.ok()) return s;
  // The name may have become something else while the copy came.
  if (absl::Status s = CheckBackupDestination(dest_, options_.held); !s.ok()) return s;
  std::error_code ec;
  fs::rename(partial_, dest_, ec);
  if (ec) {
    return absl::InternalError("cannot rename " + partial_ + " to " + dest_ + ": " + ec.message());
  }
  finished_ = true;
  if (absl::Status s = SyncPath(DirOf(dest_), true); !s.ok()) return s;
  return info_.bytes;
}

}  // namespace onset::db
