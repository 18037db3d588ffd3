// Starting child processes and describing how they ended: the one spawning primitive under the
// worker's trainer launcher, the CLI's captured commands (sbatch) and the trainer's rank
// launcher. posix_spawn, no shell, no SIGCHLD handler; what each caller does with the running
// child (pipes read by threads, a poll loop, supervision of ranks) stays with the caller.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace onset::process {

// How a child ended: exactly one of exit_code (signal == 0) or signal (non-zero) is meaningful.
struct ExitStatus {
  int exit_code = 0;  // the status passed to exit(), when the child exited
  int signal = 0;     // the signal that killed it, 0 when it exited

  // From the status waitpid() wrote.
  static ExitStatus FromWaitStatus(int wait_status);

  bool Exited() const { return signal == 0; }
  bool Succeeded() const { return signal == 0 && exit_code == 0; }
  // "exit code 3" or "killed by signal 9 (SIGKILL)": the one way onset names an ending.
  std::string ToString() const;
};

// This process's environment ("NAME=value" entries) with every entry named in `unset` or `set`
// left out, then `set`'s entries appended.
std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& set = {},
                                          const std::vector<std::string>& unset = {});

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is the program
  bool search_path = false;       // look argv[0] up on PATH when it holds no '/'
  std::vector<std::string> env;   // the child's whole environment (ChildEnvironment)
  std::string working_dir;        // empty: this process's
  bool stdin_from_null = true;    // stdin reads /dev/null; false: inherited
  int stdout_fd = -1;             // becomes the child's stdout; -1: inherited
  int stderr_fd = -1;             // becomes the child's stderr; -1: inherited
  // The child leads a new process group, so that signalling the group (kill(-pid, ...)) reaches
  // whatever it starts in turn.
  bool own_process_group = true;
  // Descriptors of this process the child gets, each at the number given (3 or more): {fd here,
  // fd there}. Only this child inherits them, whatever their close-on-exec flag here (so a
  // descriptor opened with O_CLOEXEC reaches no other child started meanwhile).
  std::vector<std::pair<int, int>> pass_fds;
};

// Starts the child with an empty signal mask and default dispositions for the signals a
// supervisor blocks or handles (INT, TERM, HUP, PIPE, QUIT, CHLD), whatever this process does
// with them. Returns its pid, or -1 with *error set to the errno value (ENOENT: no such program,
// EACCES: not executable, EINVAL: an empty argv).
pid_t Spawn(const SpawnSpec& spec, int* error);

// Waits for `pid`, retrying when a signal interrupts the wait; the child's ExitStatus, or
// exit_code -1 when it cannot be waited for (not a child of this process).
ExitStatus WaitFor(pid_t pid);

}  // namespace onset::process
