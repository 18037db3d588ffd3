#include "worker/process_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/log_line.h"
#include "common/mutex.h"
#include "common/utf8.h"

namespace onset::worker {
namespace {

// How long stdout and stderr may stay open after the child exited (a grandchild holding the pipe)
// before the readers give up on it.
constexpr std::chrono::milliseconds kDrainTimeout{2000};
// How often blocked readers look at the stop flag.
constexpr int kReaderPollMs = 100;

// The children started and not yet reaped, for KillAllChildren. A child leaves the set before it
// is reaped (under the same mutex), so its pid, and with it its process group id, cannot have been
// reused when it is signalled from here.
struct LiveChildren {
  std::mutex mu;
  std::set<pid_t> pids;
};
LiveChildren& Live() {
  static auto* live = new LiveChildren();
  return *live;
}

// Keeps the last lines of a stream within a line and a byte budget.
class TailRing {
 public:
  TailRing(size_t max_lines, size_t max_bytes) : max_lines_(max_lines), max_bytes_(max_bytes) {}

  void Add(std::string line) {
    if (line.size() > max_bytes_) {
      // Keep the end of the line, from the start of a character on.
      size_t cut = line.size() - max_bytes_;
      while (cut < line.size() && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) ++cut;
      line.erase(0, cut);
    }
    bytes_ += line.size() + 1;
    lines_.push_back(std::move(line));
    while (!lines_.empty() && (lines_.size() > max_lines_ || bytes_ > max_bytes_)) {
      bytes_ -= lines_.front().size() + 1;
      lines_.pop_front();
    }
  }

  std::string Join() const {
    std::string out;
    for (const std::string& line : lines_) {
      if (!out.empty()) out += '\n';
      out += line;
    }
    return out;
  }

 private:
  size_t max_lines_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::deque<std::string> lines_;
};

class PosixProcess : public Process {
 public:
  PosixProcess(pid_t pid, int stdout_fd, int stderr_fd, SpawnOptions options)
      : pid_(pid),
        stdout_fd_(stdout_fd),
        stderr_fd_(stderr_fd),
        options_(std::move(options)),
        tail_(options_.stderr_tail_lines, options_.stderr_tail_bytes) {
    {
      std::lock_guard<std::mutex> lock(Live().mu);
      Live().pids.insert(pid_);
    }
    stdout_reader_ = std::thread([this] {
      ReadLines(stdout_fd_, options_.stdout_max_line_bytes, [this](std::string line, size_t) {
        if (options_.on_stdout_line) options_.on_stdout_line(std::move(line));
      });
      common::MutexLock lock(&mu_);
      stdout_closed_ = true;
      cv_.notify_all();
    });
    stderr_reader_ = std::thread([this] {
      ReadLines(stderr_fd_, options_.stderr_max_line_bytes, [this](std::string raw, size_t full) {
        std::string line = common::BoundLogLine(raw, full, options_.stderr_max_line_bytes);
        if (options_.on_stderr_line) options_.on_stderr_line(line);
        common::MutexLock lock(&mu_);
        tail_.Add(std::move(line));
      });
      common::MutexLock lock(&mu_);
      stderr_closed_ = true;
      cv_.notify_all();
    });
    waiter_ = std::thread([this] { WaitForChild(); });
  }

  ~PosixProcess() override {
    {
      common::MutexLock lock(&mu_);
      if (!reaped_) kill(-pid_, SIGKILL);
    }
    waiter_.join();
    close(stdout_fd_);
    close(stderr_fd_);
  }

  int pid() const override { return pid_; }

  ExitStatus Wait() override {
    common::MutexLock lock(&mu_);
    while (!finished_) cv_.wait(mu_);
    return status_;
  }

  bool WaitFor(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    common::MutexLock lock(&mu_);
    while (!finished_ && cv_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
    }
    return finished_;
  }

  ExitStatus Terminate(std::chrono::milliseconds grace) override {
    {
      const auto deadline = std::chrono::steady_clock::now() + grace;
      common::MutexLock lock(&mu_);
      if (!reaped_) {
        terminate_requested_ = true;
        kill(-pid_, SIGTERM);
        while (!reaped_ && cv_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
        }
        if (!reaped_) kill(-pid_, SIGKILL);
      }
    }
    return Wait();
  }

  std::string StderrTail() const override {
    common::MutexLock lock(&mu_);
    return tail_.Join();
  }

 private:
  // Splits the stream on '\n' until EOF, an error or stop_readers_. A line longer than
  // `max_line_bytes` is kept as its first bytes, cut before a character that would straddle the
  // bound (for UTF-8 text), and the rest of it skipped as it arrives; `on_line` gets what was
  // kept and the length of the whole line.
  void ReadLines(int fd, size_t max_line_bytes,
                 const std::function<void(std::string, size_t)>& on_line) {
    std::string partial;  // the start of the current line, at most max_line_bytes
    size_t skipped = 0;   // bytes of the current line beyond max_line_bytes
    auto take = [&](std::string_view bytes) {
      if (skipped > 0) {
        skipped += bytes.size();
        return;
      }
      if (partial.size() + bytes.size() <= max_line_bytes) {
        partial.append(bytes);
        return;
      }
      // The line outgrows the bound: keep what fits (looking 3 bytes further, to see whether a
      // character straddles the bound) and count the rest.
      const size_t look = std::min(bytes.size(), max_line_bytes - partial.size() + 3);
      partial.append(bytes.substr(0, look));
      const size_t keep = common::Utf8PrefixLength(partial, max_line_bytes);
      skipped = partial.size() - keep + (bytes.size() - look);
      partial.resize(keep);
    };
    auto emit = [&] {
      const size_t full = partial.size() + skipped;
      on_line(std::move(partial), full);
      partial.clear();
      skipped = 0;
    };
    char buf[4096];
    while (true) {
      {
        common::MutexLock lock(&mu_);
        if (stop_readers_) break;
      }
      pollfd pfd{fd, POLLIN, 0};
      int ready = poll(&pfd, 1, kReaderPollMs);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) break;
      if (ready == 0) continue;
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;
      std::string_view chunk(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = chunk.find('\n')) != std::string_view::npos;
           chunk.remove_prefix(nl + 1)) {
        take(chunk.substr(0, nl));
        emit();
      }
      take(chunk);
    }
    if (!partial.empty() || skipped > 0) emit();
  }

  void WaitForChild() {
    // Wait without reaping: the zombie keeps the pid (and so the process group id) reserved
    // until the reap below, which happens under mu_ like every kill(-pid_, ...).
    siginfo_t info{};
    while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    {
      std::lock_guard<std::mutex> lock(Live().mu);
      Live().pids.erase(pid_);
    }
    {
      common::MutexLock lock(&mu_);
      // After a Terminate, whatever the child left running in its group goes too.
      if (terminate_requested_) kill(-pid_, SIGKILL);
      status_ = process::WaitFor(pid_);
      reaped_ = true;
      cv_.notify_all();
    }
    {
      const auto deadline = std::chrono::steady_clock::now() + kDrainTimeout;
      common::MutexLock lock(&mu_);
      while (!(stdout_closed_ && stderr_closed_) &&
             cv_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
      }
      stop_readers_ = true;
    }
    stdout_reader_.join();
    stderr_reader_.join();
    if (options_.on_exit) options_.on_exit(status_);
    common::MutexLock lock(&mu_);
    finished_ = true;
    cv_.notify_all();
  }

  const pid_t pid_;
  const int stdout_fd_;
  const int stderr_fd_;
  const SpawnOptions options_;

  mutable common::Mutex mu_;
  std::condition_variable_any cv_;
  TailRing tail_ ABSL_GUARDED_BY(mu_);
  ExitStatus status_;  // written under mu_ once, before reaped_ is set; read after finished_
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;
  bool terminate_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool stdout_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool stderr_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_readers_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;

  std::thread stdout_reader_;
  std::thread stderr_reader_;
  std::thread waiter_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Process>> PosixProcessLauncher::Spawn(SpawnOptions options) {
  int out[2];
  int err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe for ", options.program, ": ", strerror(errno)));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    close(out[0]);
    close(out[1]);
    return absl::InternalError(absl::StrCat("pipe for ", options.program, ": ", strerror(e)));
  }

  process::SpawnSpec spec;
  spec.argv.push_back(options.program);
  spec.argv.insert(spec.argv.end(), options.args.begin(), options.args.end());
  spec.env = process::ChildEnvironment(options.env, options.unset_env);
  spec.working_dir = options.working_dir;
  spec.stdout_fd = out[1];
  spec.stderr_fd = err[1];
  spec.pass_fds = options.pass_fds;
  // Its own process group, so that Terminate reaches whatever it forks; default signal
  // dispositions whatever this process blocks (the worker sigwaits for SIGINT/SIGTERM).
  spec.own_process_group = true;
  int rc = 0;
  const pid_t pid = process::Spawn(spec, &rc);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    std::string message = absl::StrCat("cannot start ", options.program, ": ", strerror(rc));
    if (rc == ENOENT) return absl::NotFoundError(message);
    if (rc == EACCES) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }
  return std::unique_ptr<Process>(new PosixProcess(pid, out[0], err[0], std::move(options)));
}

int KillAllChildren() {
  std::lock_guard<std::mutex> lock(Live().mu);
  for (pid_t pid : Live().pids) kill(-pid, SIGKILL);
  return static_cast<int>(Live().pids.size());
}

}  // namespace onset::worker
