#include "db/database_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/lock_file.h"
#include "base/posix_io.h"

namespace onset::db {
namespace {

// What the lock file says about its holder: "pid N on HOST", or a note when it says nothing
// (the holder has not written it yet, or the file was emptied by hand).
std::string DescribeHolder(int fd) {
  char buffer[512] = {};
  const ssize_t n = pread(fd, buffer, sizeof buffer - 1, 0);
  std::string text(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return "a process whose pid the file does not tell";
  return text;
}

}  // namespace

std::string DatabaseLock::LockFileFor(const std::string& db_path) {
  return base::LockFileFor(db_path);
}

absl::StatusOr<std::unique_ptr<DatabaseLock>> DatabaseLock::Acquire(const std::string& given) {
  std::filesystem::path dir = std::filesystem::path(given).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError("cannot create directory " + dir.string() +
                                         " for database " + given + ": " + ec.message());
  }
  // The file itself, not the name it was given: two names (a symbolic link, or a directory
  // reached two ways) must not let two coordinators each lock a file of their own.
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(given, ec);
  const std::string db_path = ec || resolved.empty() ? given : resolved.string();
  dir = std::filesystem::path(db_path).parent_path();
  if (dir.empty()) dir = ".";
  const std::string lock_path = LockFileFor(db_path);
  const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    const int error = errno;
    return absl::FailedPreconditionError(
        "cannot open the lock file " + lock_path + ": " + std::strerror(error) +
        ": this process must be able to write it and the directory " + dir.string() +
        " of database " + db_path +
        " (SQLite keeps its -wal and -shm files there too); check "
        "their owner and mode, and that the filesystem is not mounted read-only");
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string why;
    if (error == EWOULDBLOCK) {
      why = "database " + db_path + " is in use: " + DescribeHolder(fd) + " holds " + lock_path +
            ". Two coordinators must not serve one database (both would lease its cells); stop "
            "that one first, or use another database file";
    } else {
      why = "cannot lock " + lock_path + " (for database " + db_path + "): " + std::strerror(error);
    }
    close(fd);
    return absl::FailedPreconditionError(why);
  }
  // Ours now: say who holds it. A failure here only makes a rival's message vaguer.
  const std::string holder =
      "pid " + std::to_string(getpid()) + " on " + base::HostName("this host") + "\n";
  if (ftruncate(fd, 0) == 0) {
    (void)!pwrite(fd, holder.data(), holder.size(), 0);
  }
  return std::unique_ptr<DatabaseLock>(new DatabaseLock(fd, lock_path));
}

DatabaseLock::~DatabaseLock() {
  // Emptied first, so the file names no process that no longer holds it.
  (void)!ftruncate(fd_, 0);
  close(fd_);
}

}  // namespace onset::db
