#include "base/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace onset::process {
namespace {

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

ExitStatus ExitStatus::FromWaitStatus(int wait_status) {
  ExitStatus status;
  if (WIFSIGNALED(wait_status)) {
    status.signal = WTERMSIG(wait_status);
  } else {
    status.exit_code = WEXITSTATUS(wait_status);
  }
  return status;
}

std::string ExitStatus::ToString() const {
  if (Exited()) return "exit code " + std::to_string(exit_code);
  std::string text = "killed by signal " + std::to_string(signal);
  if (const char* name = sigabbrev_np(signal)) text += std::string(" (SIG") + name + ")";
  return text;
}

std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& set,
                                          const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (set.count(name) != 0) continue;
    if (std::find(unset.begin(), unset.end(), name) != unset.end()) continue;
    env.push_back(std::move(entry));
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

pid_t Spawn(const SpawnSpec& spec, int* error) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    *error = EINVAL;
    return -1;
  }
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = spec.env;
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (spec.stdin_from_null) posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (spec.stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, spec.stdout_fd, 1);
  if (spec.stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, spec.stderr_fd, 2);
  if (!spec.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, spec.working_dir.c_str());
  }
  // dup2 onto the same number would keep the close-on-exec flag, and onto another pair's source
  // would clobber it: such sources go through a copy first.
  std::vector<int> copies;
  for (const auto& [here, there] : spec.pass_fds) {
    int from = here;
    const bool clash = std::any_of(spec.pass_fds.begin(), spec.pass_fds.end(),
                                   [&](const std::pair<int, int>& p) { return p.second == here; });
    if (clash) {
      from = fcntl(here, F_DUPFD_CLOEXEC, 64);
      if (from < 0) {
        *error = errno;
        for (int c : copies) close(c);
        posix_spawn_file_actions_destroy(&actions);
        return -1;
      }
      copies.push_back(from);
    }
    posix_spawn_file_actions_adddup2(&actions, from, there);
  }

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spec.own_process_group) flags |= POSIX_SPAWN_SETPGROUP;
  posix_spawnattr_setflags(&attr, flags);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  pid_t pid = -1;
  const int rc = spec.search_path
                     ? posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data())
                     : posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  for (int c : copies) close(c);
  if (rc != 0) {
    *error = rc;
    return -1;
  }
  return pid;
}

ExitStatus WaitFor(pid_t pid) {
  int wait_status = 0;
  pid_t got;
  while ((got = waitpid(pid, &wait_status, 0)) < 0 && errno == EINTR) {
  }
  if (got != pid) return ExitStatus{-1, 0};
  return ExitStatus::FromWaitStatus(wait_status);
}

}  // namespace onset::process
