// `onset slurm up STUDY`, planned without running anything: how many workers a study's queued
// cells call for, the sbatch command that submits them as one Slurm array, and the environment
// that tells deploy/slurm/onset-worker.sbatch where the coordinator is and how to reach it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/auth_token.h"
#include "onset/v1/onset.pb.h"

namespace onset::cli {

inline constexpr int kMaxArrayJobs = 10000;     // --max-jobs at most
inline constexpr int kMaxExitWhenIdle = 86400;  // --exit-when-idle at most, seconds
// The job script, relative to the directory of the onset executable: in a build tree
// (build/bin/onset) and in an installation (PREFIX/bin/onset).
inline constexpr char kBuildTreeScript[] = "../../deploy/slurm/onset-worker.sbatch";
inline constexpr char kInstalledScript[] = "../share/onset/onset-worker.sbatch";

struct SlurmUpOptions {
  std::string study;
  int max_jobs = 8;       // the array's size at most
  int cells_per_job = 1;  // cells one worker job runs at once (its GPUs / devices per cell)
  std::string partition;  // --partition for sbatch, unless empty
  std::vector<std::string> sbatch_args;  // passed on after onset's own, so they override them
  int exit_when_idle_s = 300;            // the workers exit after this long without work
  bool cpu = false;                      // the workers offer CPU slots instead of GPUs
  // Submit even when the coordinator's address is a loopback one (a cluster of this one machine);
  // otherwise that is refused, since workers on other nodes could never reach it.
  bool allow_loopback = false;
  std::string script;  // --script; empty: look it up
  bool dry_run = false;
  bool json = false;

  // From this process: the sbatch to run (ONSET_SBATCH, else "sbatch" on PATH), the values of
  // ONSET_SLURM_SCRIPT and ONSET_BIN (empty when unset) and the onset executable's path.
  std::string sbatch = "sbatch";
  std::string env_script;
  std::string env_bin;
  std::string executable;
};

// How this CLI reached the coordinator, which the workers then do the same way.
struct WorkerAccess {
  std::string coordinator;      // the address the CLI used
  std::string token_file;       // the file the token came from; empty when not from a file
  bool token_from_env = false;  // the token is ONSET_TOKEN's, which sbatch passes on as it is
  // ONSET_TOKEN is set but the token came from --token-file: the workers would take
  // ONSET_TOKEN first, so it is removed from their environment.
  bool drop_env_token = false;
  std::string tls_ca;  // the certificates trusted; empty without TLS
};

// `token` as the CLI resolved it (common::ResolveClientToken takes the first source set, a
// default file only when it exists); `tls_ca`: --tls-ca, else ONSET_TLS_CA's value, may be empty.
// Relative paths become absolute here, against this process's directory.
WorkerAccess ResolveWorkerAccess(const std::string& coordinator, const common::TokenSources& token,
                                 const std::string& tls_ca);

// The cells a worker could start now or after a retry backoff: queued and backing-off ones,
// trunks among them (they are jobs too, although the study's counts leave them out), but not the
// WSD branches still waiting for their trunk's checkpoint: a node started for one would sit idle
// until the trunk gets there. The workers already running take those as they become ready (an
// idle worker does not exit while cells wait for it), and `slurm up` run again adds more.
int64_t QueuedCells(const v1::GetStudyResponse& study);

// ceil(queued / cells_per_job), at most max_jobs; 0 when nothing is queued.
int ArraySize(int64_t queued, int cells_per_job, int max_jobs);

// The job script, absolute: `flag` when set, else `env` when set (each must exist), else
// kBuildTreeScript or kInstalledScript next to `executable`, the first that exists. NotFound
// naming where it looked otherwise.
absl::StatusOr<std::string> FindWorkerScript(const std::string& flag, const std::string& env,
                                             const std::string& executable);

// The sbatch command and the environment it runs in.
struct SbatchPlan {
  std::vector<std::string> argv;           // argv[0]: the sbatch program
  std::map<std::string, std::string> set;  // set in sbatch's environment (it passes them on)
  std::vector<std::string> unset;          // removed from it
};

// `sbatch --parsable --array=0-(workers-1) --job-name=onset-STUDY [--gres=none with --cpu]
// [--partition=P] [sbatch_args...] SCRIPT`, with ONSET_COORDINATOR, ONSET_TOKEN_FILE (when the
// token came from a file; ONSET_TOKEN is then removed, so that the workers use the same token),
// ONSET_TLS_CA, ONSET_BIN (the executable's directory, unless options.env_bin is set),
// ONSET_EXIT_WHEN_IDLE and ONSET_DEVICES=cpu for --cpu. `workers` >= 1.
SbatchPlan PlanSbatch(const SlurmUpOptions& options, int workers, const std::string& script,
                      const WorkerAccess& access);

// Whether the address names this machine only ("localhost", 127.0.0.0/8, [::1], the wildcards
// 0.0.0.0 and [::], or a unix socket): workers on other nodes cannot reach it.
bool IsLoopbackAddress(const std::string& address);

// The job id of `sbatch --parsable`'s output, "JOBID" or "JOBID;CLUSTER" (and a newline).
// InvalidArgument quoting the output when it is neither.
absl::StatusOr<std::string> ParseJobId(const std::string& sbatch_output);

// The command for a shell: each word quoted when it needs to be.
std::string ShellCommand(const std::vector<std::string>& argv);

// What a dry run prints: the command and the ONSET_* settings, never a token.
std::string DescribePlan(const SbatchPlan& plan, const WorkerAccess& access);

}  // namespace onset::cli
