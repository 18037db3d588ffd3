#include "model/distributed/dist_launch.h"

#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/process.h"
#include "base/trainer_contract.h"

namespace onset::model {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPollInterval{20};
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};

volatile sig_atomic_t g_signal = 0;  // the last forwarded signal received, 0 = none
void OnSignal(int signal) { g_signal = signal; }

// The environment of rank `rank`: ours without any data-parallel variables, plus its own.
std::vector<std::string> RankEnvironment(int rank, int nproc, const std::string& store) {
  const std::string r = std::to_string(rank), n = std::to_string(nproc);
  // Set replaces this process's own; MASTER_* (a multi-node launcher's) are left out.
  return process::ChildEnvironment({{"RANK", r},
                                    {"LOCAL_RANK", r},
                                    {"WORLD_SIZE", n},
                                    {"LOCAL_WORLD_SIZE", n},
                                    {"ONSET_STORE_FILE", store},
                                    {"ONSET_LAUNCHER_PID", std::to_string(::getpid())}},
                                   {"MASTER_ADDR", "MASTER_PORT"});
}

void RemoveDir(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// The ranks' processes and their supervision.
class Ranks {
 public:
  explicit Ranks(int nproc) : pids_(nproc, -1), running_(nproc, false) {}

  // Starts rank `rank`; returns an error message on failure.
  std::string Start(int rank, const LaunchOptions& o, const std::string& store) {
    process::SpawnSpec spec;
    spec.argv = {o.program};
    spec.argv.insert(spec.argv.end(), o.args.begin(), o.args.end());
    spec.env = RankEnvironment(rank, o.nproc, store);
    // The ranks share this launcher's stdin, stdout, stderr and process group: a worker that
    // signals the group reaches every rank.
    spec.stdin_from_null = false;
    spec.own_process_group = false;
    int error = 0;
    const pid_t pid = process::Spawn(spec, &error);
    if (pid < 0) return "cannot start " + o.program + ": " + std::strerror(error);
    pids_[rank] = pid;
    running_[rank] = true;
    ++live_;
    std::fprintf(stderr, "onset-train: started rank %d of %zu (pid %d)\n", rank, pids_.size(),
                 static_cast<int>(pid));
    return "";
  }

  void Signal(int signal) {
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (running_[r]) ::kill(pids_[r], signal);
    }
  }

  // Kills and reaps every started rank (when not all of them could be started).
  void KillAll() {
    Signal(SIGKILL);
    for (size_t r = 0; r < pids_.size(); ++r) {
      if (running_[r]) ::waitpid(pids_[r], nullptr, 0);
      running_[r] = false;
    }
    live_ = 0;
  }

  // Waits for every started rank; returns the exit code (see dist_launch.h).
  int Supervise(std::chrono::milliseconds grace) {
    int exit_code = 0;
    int forwarded = 0;                // the signal passed on to the ranks
    bool all_stopped_cleanly = true;  // every rank exited trainer::kExitStopped (checkpointed)
    bool stopping = false, terminated = false, killed = false;
    Clock::time_point term_at, kill_at;
    while (live_ > 0) {
      if (g_signal != 0 && forwarded == 0) {
        forwarded = g_signal;
        Signal(forwarded);
        stopping = terminated = true;
        kill_at = Clock::now() + grace;
      }
      bool reaped = false;
      for (size_t r = 0; r < pids_.size(); ++r) {
        if (!running_[r]) continue;
        int status = 0;
        const pid_t got = ::waitpid(pids_[r], &status, WNOHANG);
        if (got == 0 || (got < 0 && errno == EINTR)) continue;
        const std::string how =
            got > 0 ? "ended: " + process::ExitStatus::FromWaitStatus(status).ToString()
                    : std::string("vanished: ") + std::strerror(errno);
        running_[r] = false;
        --live_;
        reaped = true;
        const bool ok = got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        all_stopped_cleanly = all_stopped_cleanly && got > 0 && WIFEXITED(status) &&
                              WEXITSTATUS(status) == trainer::kExitStopped;
        if (ok || stopping) continue;
        // The first failure; the others' that follow are its consequences.
        exit_code = got > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        std::fprintf(stderr, "onset-train: rank %zu of %zu (pid %d) %s; stopping the other ranks\n",
                     r, pids_.size(), static_cast<int>(pids_[r]), how.c_str());
        stopping = true;
        term_at = Clock::now() + grace;
        kill_at = term_at + grace;
      }
      if (reaped) continue;
      const Clock::time_point now = Clock::now();
      if (stopping && !terminated && now >= term_at) {
        Signal(SIGTERM);
        terminated = true;
      }
      if (stopping && !killed && now >= kill_at) {
        Signal(SIGKILL);
        killed = true;
      }
      std::this_thread::sleep_for(kPollInterval);
    }
    if (forwarded != 0) {
      std::fprintf(stderr, "onset-train: stopped by signal %d (%s)%s\n", forwarded,
                   strsignal(forwarded), all_stopped_cleanly ? "; every rank checkpointed" : "");
      // Ranks that checkpointed make a clean stop the worker can hand back.
      return all_stopped_cleanly ? trainer::kExitStopped : 128 + forwarded;
    }
    return exit_code;
  }

 private:
  std::vector<pid_t> pids_;
  std::vector<bool> running_;
  int live_ = 0;
};

}  // namespace

int LaunchLocalRanks(const LaunchOptions& options) {
  std::string base = options.tmp_dir;
  if (base.empty()) base = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
  std::string dir = base + "/onset-train-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::fprintf(stderr, "onset-train: cannot create a rendezvous directory in %s: %s\n",
                 base.c_str(), std::strerror(errno));
    return 1;
  }
  const std::string store = dir + "/store";

  g_signal = 0;
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  constexpr int kSignals = sizeof kForwarded / sizeof kForwarded[0];
  struct sigaction previous[kSignals];
  for (int i = 0; i < kSignals; ++i) ::sigaction(kForwarded[i], &action, &previous[i]);

  Ranks ranks(options.nproc);
  int exit_code = -1;
  for (int r = 0; r < options.nproc && exit_code < 0; ++r) {
    const std::string error = ranks.Start(r, options, store);
    if (error.empty()) continue;
    std::fprintf(stderr, "onset-train: rank %d: %s\n", r, error.c_str());
    ranks.KillAll();
    exit_code = 1;
  }
  if (exit_code < 0) exit_code = ranks.Supervise(options.grace);

  for (int i = 0; i < kSignals; ++i) ::sigaction(kForwarded[i], &previous[i], nullptr);
  RemoveDir(dir);
  return exit_code;
}

std::string SelfExecutable(const std::string& fallback) {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return fallback;
  return std::string(path, static_cast<size_t>(n));
}

void FollowLauncher(const EnvLookup& env) {
#ifdef __linux__
  const char* launcher = env("ONSET_LAUNCHER_PID");
  if (launcher == nullptr) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The supervisor may have died before the request took effect.
  if (::getppid() != static_cast<pid_t>(std::atol(launcher))) ::raise(SIGKILL);
#else
  (void)env;
#endif
}

}  // namespace onset::model
