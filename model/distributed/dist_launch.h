// onset-train --nproc N: one command line that trains data-parallel on N ranks of this machine.
// Torch-free.
//
// The process given --nproc trains nothing itself; it is the ranks' supervisor. It makes a fresh
// temporary directory for the rendezvous (a c10d FileStore file: no port to choose, nothing to
// collide with), starts N copies of the same program with the same arguments minus --nproc, each
// with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and ONSET_STORE_FILE set (dist_env.h) and
// ONSET_LAUNCHER_PID naming it, and waits:
//
//   - The ranks inherit its descriptors (stdout, stderr, --metrics-fd) and its process group, so
//     rank 0's metrics go where a single process's would, and whoever kills the group kills all.
//   - Every rank exits 0: it exits 0.
//   - A rank exits non-zero or is killed: it says which on stderr ("rank 1 of 2 (pid 123) was
//     killed by signal 9 (Killed)"), gives the others `grace` to stop by themselves (their next
//     collective with the dead rank fails), then SIGTERM, and after another `grace` SIGKILL. It
//     exits with that first rank's exit code, or 1 when it was killed, so 2 still means bad input
//     and 3 divergence (every rank stops at the same step then).
//   - SIGINT, SIGTERM or SIGHUP sent to it go to every rank; once they are gone it exits 4
//     (trainer::kExitStopped) when every rank checkpointed and stopped cleanly, else 128 + the
//     signal.
//   - Each rank asks the kernel to kill it when the supervisor dies (FollowLauncher, Linux).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "model/distributed/dist_env.h"

namespace onset::model {

struct LaunchOptions {
  std::string program;            // the executable to start (this one: /proc/self/exe)
  std::vector<std::string> args;  // its arguments, argv[1] on, the same for every rank
  int nproc = 1;                  // ranks
  std::chrono::milliseconds grace{10'000};
  std::string tmp_dir;  // where the rendezvous directory goes; empty = $TMPDIR, /tmp
};

// Runs the ranks and returns the exit code described above.
int LaunchLocalRanks(const LaunchOptions& options);

// The path of the running executable (/proc/self/exe resolved), or `fallback` (argv[0]).
std::string SelfExecutable(const std::string& fallback);

// In a rank started by LaunchLocalRanks (ONSET_LAUNCHER_PID set): dies with the supervisor.
void FollowLauncher(const EnvLookup& env);

}  // namespace onset::model
