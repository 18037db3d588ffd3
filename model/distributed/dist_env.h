// Where this process sits in a data-parallel run, read from its environment. Torch-free.
//
// The variables are torchrun's, so torchrun, srun wrappers and similar launchers start ranks
// without anything onset-specific; onset-train --nproc (dist_launch.h) sets the same ones:
//
//   WORLD_SIZE        ranks in the run; unset or 1 = a single process (the rest is ignored)
//   RANK              this rank, 0 .. WORLD_SIZE - 1; rank 0 reports, evaluates, checkpoints
//   LOCAL_RANK        this rank's index on its machine: its CUDA device is cuda:LOCAL_RANK
//   LOCAL_WORLD_SIZE  ranks on this machine (default 1): CPU ranks share the threads by it
//   MASTER_ADDR, MASTER_PORT  where rank 0 serves the rendezvous store (a c10d TCPStore)
//   ONSET_STORE_FILE  instead of MASTER_*, a c10d FileStore path every rank can open
//                     (what --nproc uses: a fresh temporary directory, no port to pick)
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace onset::model {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string store_file;   // set: FileStore rendezvous
  std::string master_addr;  // otherwise: TCPStore rendezvous at master_addr:master_port
  int master_port = 0;

  bool distributed() const { return world_size > 1; }
};

// Looks a variable up: its value, or null when unset. std::getenv in production.
using EnvLookup = std::function<const char*(const char*)>;

// Fills *out from the environment. Returns an error naming the variable when one is missing
// or malformed (for a run of several ranks: RANK, LOCAL_RANK and a rendezvous are required).
std::optional<std::string> ReadDistEnv(const EnvLookup& env, DistEnv* out);

// Whether `host` names this machine's loopback interface (localhost, 127.x.y.z, ::1): ranks
// that meet there are all on this machine, and their Gloo sockets can bind to it too.
bool IsLoopback(const std::string& host);

}  // namespace onset::model
