// Child processes for the worker: the trainer runs as a separate process in its own process
// group, its stdout carries metrics line by line and its stderr is kept as a bounded tail.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/process.h"
#include "common/log_line.h"

namespace onset::worker {

// How a child ended (base/process.h).
using ExitStatus = process::ExitStatus;

struct SpawnOptions {
  std::string program;                     // path of the executable; no PATH search
  std::vector<std::string> args;           // argv[1..]; argv[0] is `program`
  std::map<std::string, std::string> env;  // set on top of this process's environment
  std::vector<std::string> unset_env;      // names left out of this process's environment
  std::string working_dir;                 // empty: inherit this process's directory
  // Descriptors of this process the child (and no other) gets, at the numbers given: {fd here,
  // fd there} (base/process.h). The caller closes its own copies when it no longer needs them.
  std::vector<std::pair<int, int>> pass_fds;
  size_t stderr_tail_lines = 50;    // the stderr tail keeps at most this many lines
  size_t stderr_tail_bytes = 8192;  // and at most this many bytes
  // stderr is text (a log): each line reaches on_stderr_line and the tail as valid UTF-8
  // (invalid bytes become U+FFFD) of at most this many bytes, a longer one cut on a character
  // boundary with a marker that gives its length (common/log_line.h). The rest of a long line
  // is skipped as it is read, never held.
  size_t stderr_max_line_bytes = common::kMaxLogLineBytes;
  // stdout lines longer than this reach on_stdout_line as their first this many bytes (the
  // rest is skipped as it is read); they are passed on as they are otherwise.
  size_t stdout_max_line_bytes = 16 << 20;

  // Called on the process's stdout reader thread, once per line (newline stripped), in order.
  // Must not call back into the Process. May be empty.
  std::function<void(std::string line)> on_stdout_line;
  // Likewise for stderr, on its reader thread; the line also goes to the tail. May be empty.
  std::function<void(const std::string& line)> on_stderr_line;
  // Called once, on the process's waiter thread, after the child has been reaped and after the
  // last on_stdout_line call. May be empty.
  std::function<void(const ExitStatus&)> on_exit;
};

// A running (or finished) child. All methods are thread-safe. Destroying a Process whose child
// still runs kills the child's process group with SIGKILL and reaps it.
class Process {
 public:
  virtual ~Process() = default;

  virtual int pid() const = 0;

  // Blocks until the child has exited and on_exit has returned.
  virtual ExitStatus Wait() = 0;

  // Waits up to `timeout`; true when the child has exited (then Wait() returns at once).
  virtual bool WaitFor(std::chrono::milliseconds timeout) = 0;

  // Sends SIGTERM to the child's process group, then SIGKILL to the group if the child has not
  // exited after `grace`. Blocks until the child has exited. No-op once the child has exited.
  virtual ExitStatus Terminate(std::chrono::milliseconds grace) = 0;

  // The last lines written to stderr (bounded by SpawnOptions), joined with '\n'. Complete once
  // the child has exited.
  virtual std::string StderrTail() const = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  // Starts `options.program`. Errors: NotFound / PermissionDenied when the program cannot be
  // executed, Internal for other spawn failures; the message names the program.
  virtual absl::StatusOr<std::unique_ptr<Process>> Spawn(SpawnOptions options) = 0;
};

// posix_spawn with POSIX_SPAWN_SETPGROUP (the child leads its own group so that Terminate reaches
// whatever it forks), two pipes and one reader thread per pipe plus a waiter thread per child.
// The waiter uses waitid(WNOWAIT) so that the child is reaped only under the lock that guards
// signalling: a group is never signalled after its leader's pid could have been reused.
// No SIGCHLD handler is installed.
class PosixProcessLauncher : public ProcessLauncher {
 public:
  absl::StatusOr<std::unique_ptr<Process>> Spawn(SpawnOptions options) override;
};

// Sends SIGKILL to the process group of every child that a PosixProcessLauncher of this process
// started and that has not been reaped: what a supervisor does before it exits at once (a second
// Ctrl-C), so that no trainer outlives it. Returns how many groups were signalled. Thread-safe;
// not for a signal handler (it takes a mutex).
int KillAllChildren();

}  // namespace onset::worker
