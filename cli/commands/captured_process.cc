#include "cli/commands/captured_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace onset::cli {
namespace {

// Closes the descriptors it holds when it goes out of scope.
struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void CloseWriteEnd() {
    close(fds[1]);
    fds[1] = -1;
  }
};

}  // namespace

absl::StatusOr<CapturedRun> RunCaptured(const CaptureOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError("no command to run");
  }
  const std::string& program = options.argv[0];
  Pipe out, err;
  if (pipe2(out.fds, O_CLOEXEC) != 0 || pipe2(err.fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("cannot run ", program, ": pipe: ", strerror(errno)));
  }
  process::SpawnSpec spec;
  spec.argv = options.argv;
  spec.search_path = true;
  spec.env = process::ChildEnvironment(options.set, options.unset);
  spec.stdout_fd = out.fds[1];
  spec.stderr_fd = err.fds[1];
  // Its own process group, so that a timeout kills whatever it started too.
  spec.own_process_group = true;
  int rc = 0;
  const pid_t pid = process::Spawn(spec, &rc);
  out.CloseWriteEnd();
  err.CloseWriteEnd();
  if (pid < 0) {
    const std::string message = absl::StrCat("cannot run ", program, ": ", strerror(rc));
    if (rc == ENOENT) return absl::NotFoundError(message);
    if (rc == EACCES) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }

  CapturedRun run;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  struct pollfd fds[2] = {{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_streams = 2;
  bool timed_out = false;
  while (open_streams > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;  // ignored by poll from now on
        --open_streams;
        continue;
      }
      const size_t room =
          options.max_output_bytes - std::min(options.max_output_bytes, sinks[i]->size());
      sinks[i]->append(buffer, std::min(room, static_cast<size_t>(n)));
    }
  }
  // Both streams closed: the command has exited, or closed them and runs on.
  int status = 0;
  while (!timed_out) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    poll(nullptr, 0, 10);
  }
  if (timed_out) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(
        program, " did not finish within ", options.timeout.count() / 1000.0, " s: killed it"));
  }
  run.status = process::ExitStatus::FromWaitStatus(status);
  return run;
}

}  // namespace onset::cli
