#include "model/training/train_app.h"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#if __has_include(<ATen/cuda/CUDAContext.h>)
#include <ATen/cuda/CUDAContext.h>
#define ONSET_HAVE_ATEN_CUDA 1
#endif
#include <torch/cuda.h>

#include "base/trainer_contract.h"
#include "model/command_flags.h"
#include "model/config/flops.h"
#include "model/distributed/c10d_collective.h"
#include "model/distributed/dist_env.h"
#include "model/distributed/dist_launch.h"
#include "model/nn/attention_backend.h"
#include "model/training/metrics_writer.h"
#include "model/training/stop_request.h"
#include "model/training/train_flags.h"
#include "model/training/trainer.h"

namespace onset::model {
namespace {

// The ranks' store and process group (dist_env.h says where they meet).
std::unique_ptr<C10dCollective> JoinRanks(const DistEnv& env, const at::Device& device,
                                          std::chrono::milliseconds timeout) {
  const bool local = !env.store_file.empty() || IsLoopback(env.master_addr);
  auto store = !env.store_file.empty() ? OpenFileStore(env.store_file, env.world_size, timeout)
                                       : OpenTcpStore(env.master_addr, env.master_port,
                                                      env.rank == 0, env.world_size, timeout);
  // Ranks of one machine talk over loopback; others over the default interface (or
  // GLOO_SOCKET_IFNAME).
  return std::make_unique<C10dCollective>(store, env.rank, env.world_size, device, timeout,
                                          local ? "127.0.0.1" : "");
}

// What one process of a run is: its flags, its rank, and the cell (or WSD trunk) it trains.
struct TrainJob {
  TrainFlags flags;
  DistEnv env;
  std::string me;  // how its messages start: "onset-train", or with its rank
  CellConfig config;
  std::optional<TrunkSpec> trunk;  // the config file holds a WSD trunk's spec
};

// Where it trains.
struct Placement {
  bool cuda = false;
  at::Device device{at::kCPU};
};

// Step 1: the job, from the command line, the launcher's environment and the config file. Also
// ties the process to its supervisor, before anything else starts, so that the ranks a launcher
// starts are watched too. An exit code when it cannot run.
std::optional<int> ReadJob(int argc, char** argv, TrainJob* job) {
  TrainFlags& flags = job->flags;
  if (auto exit = ExitBeforeRunning(ParseTrainFlags(argc, argv, &flags), flags, kTrainUsage)) {
    return exit;
  }
  const EnvLookup getenv = [](const char* name) { return std::getenv(name); };
  FollowLauncher(getenv);
  if (auto error = ReadDistEnv(getenv, &job->env)) {
    std::fprintf(stderr, "onset-train: %s\n", error->c_str());
    return trainer::kExitUsage;
  }
  const DistEnv& env = job->env;
  // Only the process that writes the checkpoints (rank 0, not a launcher) reads what the worker
  // says.
  if (flags.supervisor_fd >= 0) {
    if (::fcntl(flags.supervisor_fd, F_GETFD) == -1) {
      std::fprintf(stderr, "onset-train: %s %d: not an open file descriptor\n",
                   trainer::kFlagSupervisorFd, flags.supervisor_fd);
      return trainer::kExitUsage;
    }
    DieWithSupervisor(flags.supervisor_fd,
                      /*read_acknowledgements=*/flags.nproc <= 1 && env.rank == 0);
  }
  if (flags.nproc > 1 && env.distributed()) {
    std::fprintf(stderr,
                 "onset-train: --nproc %d: this process is already rank %d of %d "
                 "(WORLD_SIZE is set); launch the ranks one way, not both\n",
                 flags.nproc, env.rank, env.world_size);
    return trainer::kExitUsage;
  }
  // Messages of ranks other than 0 say whose they are.
  job->me = env.rank == 0 ? "onset-train" : "onset-train[rank " + std::to_string(env.rank) + "]";
  const char* me = job->me.c_str();
  if (::fcntl(flags.metrics_fd, F_GETFD) == -1) {
    std::fprintf(stderr, "%s: --metrics-fd %d: not an open file descriptor\n", me,
                 flags.metrics_fd);
    return trainer::kExitUsage;
  }
  if (auto error = LoadTrainConfig(flags.config_path, &job->config, &job->trunk)) {
    std::fprintf(stderr, "%s: %s\n", me, error->c_str());
    return trainer::kExitUsage;
  }
  if (job->trunk && !flags.branch_from.empty()) {
    std::fprintf(stderr, "%s: %s %s: %s holds a WSD trunk, which branches from nothing\n", me,
                 trainer::kFlagBranchFrom, flags.branch_from.c_str(), flags.config_path.c_str());
    return trainer::kExitUsage;
  }
  return std::nullopt;
}

// Step 2: the device it trains on; each rank of a machine gets its own CUDA device, CPU ranks
// share its threads. A usage error when the machine lacks what was asked.
std::optional<int> Place(const TrainJob& job, Placement* where) {
  const TrainFlags& flags = job.flags;
  const DistEnv& env = job.env;
  const char* me = job.me.c_str();
  where->cuda = flags.device != "cpu" && torch::cuda::is_available();
  if (flags.device == "cuda" && !where->cuda) {
    std::fprintf(stderr, "%s: --device cuda: no CUDA device is available\n", me);
    return trainer::kExitUsage;
  }
  const int devices = where->cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (where->cuda && flags.nproc > devices) {
    std::fprintf(stderr,
                 "%s: --nproc %d: this machine has %d CUDA devices (--device cpu for "
                 "ranks on the CPU)\n",
                 me, flags.nproc, devices);
    return trainer::kExitUsage;
  }
  if (where->cuda && env.distributed() && env.local_rank >= devices) {
    std::fprintf(stderr, "%s: LOCAL_RANK %d: this machine has %d CUDA devices\n", me,
                 env.local_rank, devices);
    return trainer::kExitUsage;
  }
  where->device = !where->cuda        ? at::Device(at::kCPU)
                  : env.distributed() ? at::Device(at::kCUDA, env.local_rank)
                                      : at::Device(at::kCUDA);
  return std::nullopt;
}

// Step 3, with --nproc N > 1 only: this process starts the N ranks (itself again, without
// --nproc) and waits for them.
int LaunchRanks(const TrainJob& job, int argc, char** argv) {
  LaunchOptions launch;
  launch.program = SelfExecutable(argv[0]);
  launch.args = ArgsWithout(trainer::kFlagNproc, argc, argv);
  launch.nproc = job.flags.nproc;
  return LaunchLocalRanks(launch);
}

// Step 4: the process set up to train: stop requests, the attention backend, CPU threads.
std::optional<int> SetUpProcess(const TrainJob& job, const Placement& where) {
  // SIGTERM/SIGINT: checkpoint after the current step and exit trainer::kExitStopped.
  InstallStopHandlers();
  const AttentionBackend backend = *ParseAttentionBackend(job.flags.attention_backend);
  if (auto why = AttentionBackendUnavailable(backend, where.device)) {
    std::fprintf(stderr, "%s: --attention-backend %s: %s\n", job.me.c_str(),
                 job.flags.attention_backend.c_str(), why->c_str());
    return trainer::kExitUsage;
  }
  SetAttentionBackend(backend);
  int threads = job.flags.threads.value_or(job.config.train.threads);
  if (!where.cuda && job.env.local_world_size > 1) {
    if (threads == 0) threads = at::get_num_threads();
    threads = std::max(1, threads / job.env.local_world_size);
  }
  if (threads > 0) at::set_num_threads(threads);
  return std::nullopt;
}

// Step 5: the trainer, started where the flags say, run to its end; the exit code says how it
// ended (base/trainer_contract.h).
int Train(const TrainJob& job, const Placement& where) {
  const TrainFlags& flags = job.flags;
  std::unique_ptr<C10dCollective> collective;
  if (job.env.distributed()) {
    collective = JoinRanks(job.env, where.device, std::chrono::seconds(flags.dist_timeout_s));
  }
  JsonLinesSink sink(flags.metrics_fd);
  std::unique_ptr<Trainer> made =
      job.trunk ? std::make_unique<Trainer>(*job.trunk, where.device, &sink, flags.checkpoint_dir,
                                            collective.get())
                : std::make_unique<Trainer>(job.config, where.device, &sink, flags.checkpoint_dir,
                                            collective.get());
#ifdef ONSET_HAVE_ATEN_CUDA
  if (where.device.is_cuda()) {
    const std::string name = at::cuda::getCurrentDeviceProperties()->name;
    if (std::optional<double> peak = PeakBf16Flops(name)) {
      made->set_peak_flops(*peak);
    } else if (!collective || collective->rank() == 0) {
      std::fprintf(stderr, "%s: no published bf16 peak for %s: no MFU\n", job.me.c_str(),
                   name.c_str());
    }
  }
#endif
  if (flags.resume || !flags.resume_from.empty() || !flags.branch_from.empty()) {
    StartFrom from;
    from.own = flags.resume;
    from.files = flags.resume_from;
    from.branch_from = flags.branch_from;
    if (std::optional<std::string> error = made->Start(from)) {
      std::fprintf(stderr, "%s: %s\n", job.me.c_str(), error->c_str());
      return trainer::kExitUsage;
    }
  }
  switch (made->Run().outcome) {
    case TrainOutcome::kDiverged:
      return trainer::kExitDiverged;
    case TrainOutcome::kStopped:
      return trainer::kExitStopped;
    case TrainOutcome::kDone:
      break;
  }
  return trainer::kExitOk;
}

}  // namespace

int TrainMain(int argc, char** argv) {
  TrainJob job;
  if (auto exit = ReadJob(argc, argv, &job)) return *exit;
  const char* me = job.me.c_str();
  const char* config = job.flags.config_path.c_str();
  try {
    Placement where;
    if (auto exit = Place(job, &where)) return *exit;
    if (job.flags.nproc > 1) return LaunchRanks(job, argc, argv);
    if (auto exit = SetUpProcess(job, where)) return *exit;
    return Train(job, where);
  } catch (const DataError& e) {
    std::fprintf(stderr, "%s: %s: %s\n", me, config, e.what());
    return trainer::kExitUsage;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", me, config, e.what_without_backtrace());
    return trainer::kExitRuntimeError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s: %s\n", me, config, e.what());
    return trainer::kExitRuntimeError;
  }
}

}  // namespace onset::model
