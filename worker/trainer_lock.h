// Whether an attempt's trainer still runs, whatever became of the worker that started it: a file
// in the attempt's directory on which the trainer (and every process it starts) holds an flock
// while it runs. The worker takes the lock before the trainer starts and hands the descriptor to
// it (SpawnOptions::pass_fds); the lock goes when the last process holding it dies, SIGKILL
// included. `onset run` starting again on a data directory whose previous process died requeues
// a running cell only once its trainer's lock can be taken (WaitForTrainerGone).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onset::worker {

// "trainer.lock", in the attempt's directory.
inline constexpr char kTrainerLockFile[] = "trainer.lock";

// The lock, held by this process until Release() (or destruction) and by whatever inherited it.
// Move-only.
class TrainerLock {
 public:
  // Creates `path` if needed and takes its lock without waiting. FailedPrecondition when another
  // process holds it (a trainer of this attempt still runs), Internal for other failures; the
  // message names the file.
  static absl::StatusOr<TrainerLock> Take(const std::filesystem::path& path);

  TrainerLock(TrainerLock&& other) noexcept;
  TrainerLock& operator=(TrainerLock&& other) noexcept;
  TrainerLock(const TrainerLock&) = delete;
  TrainerLock& operator=(const TrainerLock&) = delete;
  ~TrainerLock();

  // The locked descriptor (close-on-exec here), to hand to the trainer; -1 once released.
  int fd() const { return fd_; }
  // Records the trainer's pid in the file, for whoever must stop it after this process is gone.
  absl::Status WritePid(pid_t pid);
  // Closes this process's descriptor: the lock stays while the trainer holds its copy.
  void Release();

 private:
  TrainerLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}

  int fd_ = -1;
  std::filesystem::path path_;
};

// Waits until nothing holds the lock at `path` (OK at once when there is no such file: no
// trainer ever started there). A lock still held after `wait` belongs to a trainer whose
// supervisor is gone: every process that has the file open (its /proc entry says so, so a
// reused pid is never hit) is killed with SIGKILL and the lock waited for again, up to `wait`.
// DeadlineExceeded, naming the file and the pid it records, when it is still held.
absl::Status WaitForTrainerGone(const std::filesystem::path& path, std::chrono::milliseconds wait);

}  // namespace onset::worker
