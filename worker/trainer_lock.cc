#include "worker/trainer_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace onset::worker {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::milliseconds kPoll{50};

// Tries the lock at `path` once: true when it was free (it is released again at once).
absl::StatusOr<bool> LockIsFree(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return true;
    return absl::InternalError(absl::StrCat("cannot open ", path.string(), ": ", strerror(errno)));
  }
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  const int error = errno;
  ::close(fd);
  if (!free && error != EWOULDBLOCK) {
    return absl::InternalError(absl::StrCat("cannot lock ", path.string(), ": ", strerror(error)));
  }
  return free;
}

absl::StatusOr<bool> WaitFree(const fs::path& path, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    absl::StatusOr<bool> free = LockIsFree(path);
    if (!free.ok() || *free) return free;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPoll);
  }
}

// The pid written in the file, 0 when none can be read.
pid_t RecordedPid(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  return static_cast<pid_t>(std::strtol(buf, nullptr, 10));
}

// Whether process `pid` has the file `target` (canonical) open, as its /proc entry says.
bool HasOpen(pid_t pid, const fs::path& target) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    if (fs::read_symlink(entry.path(), link_ec) == target) return true;
  }
  return false;
}

// Kills every process that has `path` open (they hold the lock: the trainer and its ranks).
// Returns how many.
int KillHolders(const fs::path& path) {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(path, ec);
  int killed = 0;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid() || !HasOpen(pid, target)) continue;
    killed += ::kill(pid, SIGKILL) == 0 ? 1 : 0;
  }
  return killed;
}

}  // namespace

absl::StatusOr<TrainerLock> TrainerLock::Take(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", path.string(), ": ", strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat(path.string(), " is locked: a trainer of this attempt still runs"));
    }
    return absl::InternalError(absl::StrCat("cannot lock ", path.string(), ": ", strerror(error)));
  }
  return TrainerLock(fd, path);
}

TrainerLock::TrainerLock(TrainerLock&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

TrainerLock& TrainerLock::operator=(TrainerLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

TrainerLock::~TrainerLock() { Release(); }

absl::Status TrainerLock::WritePid(pid_t pid) {
  if (fd_ < 0) return absl::FailedPreconditionError("the trainer lock was released");
  const std::string text = std::to_string(pid) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path_.string(), ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

void TrainerLock::Release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

absl::Status WaitForTrainerGone(const fs::path& path, std::chrono::milliseconds wait) {
  absl::StatusOr<bool> free = WaitFree(path, wait);
  if (!free.ok()) return free.status();
  if (*free) return absl::OkStatus();
  const pid_t pid = RecordedPid(path);
  KillHolders(path);
  free = WaitFree(path, wait);
  if (!free.ok()) return free.status();
  if (*free) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("a trainer still holds ", path.string(), " (pid ", pid, ") after ",
                   std::chrono::duration_cast<std::chrono::milliseconds>(wait).count() * 2, " ms"));
}

}  // namespace onset::worker
