// How onset-train is started for a job: its arguments, environment and directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/attempt_dir.h"
#include "worker/devices.h"
#include "worker/process_launcher.h"

namespace onset::worker {

// The launch on the devices the coordinator gave a job (devices.h), or nullopt when it gave
// none and the trainer chooses. The error's message is the job's failure reason.
absl::StatusOr<std::optional<DeviceLaunch>> TrainerLaunch(const std::vector<std::string>& devices);

// The descriptors a trainer is handed (base/trainer_contract.h: kTrainerLockFd, kSupervisorFd);
// -1 leaves one out.
struct TrainerFds {
  int lock = -1;        // the attempt's locked trainer lock (trainer_lock.h)
  int supervisor = -1;  // the trainer's end of a socket whose other end the worker holds
};

// The trainer's command line, environment and working directory (the callbacks are left
// empty): `threads` intra-op threads, the attempt's config, its own checkpoint directory, the
// checkpoints it may resume (--resume-from, the newest first), for a WSD branch the trunk
// checkpoint it starts from otherwise (`trunk_checkpoint`, JobSpec's; empty = none), `fds`,
// and, on devices, one rank per device. CUDA_VISIBLE_DEVICES shows the trainer its GPUs only
// (none for CPU slots), so its ranks use cuda:0..N-1 of what it sees.
SpawnOptions TrainerCommand(const std::string& trainer_path, int threads, const AttemptDir& attempt,
                            const std::string& trunk_checkpoint,
                            const std::optional<DeviceLaunch>& launch, const TrainerFds& fds = {});

// " on cuda:3,cuda:1 (--device cuda --nproc 2)" for the worker's log; "" without devices.
std::string DescribeLaunch(const std::vector<std::string>& devices,
                           const std::optional<DeviceLaunch>& launch);

}  // namespace onset::worker
