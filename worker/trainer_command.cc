#include "worker/trainer_command.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/trainer_contract.h"

namespace onset::worker {

absl::StatusOr<std::optional<DeviceLaunch>> TrainerLaunch(const std::vector<std::string>& devices) {
  if (devices.empty()) return std::optional<DeviceLaunch>();
  absl::StatusOr<DeviceLaunch> on = LaunchOn(devices);
  if (!on.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot run on the devices the coordinator gave (",
                     absl::StrJoin(devices, ","), "): ", on.status().message()));
  }
  return std::optional<DeviceLaunch>(*std::move(on));
}

SpawnOptions TrainerCommand(const std::string& trainer_path, int threads, const AttemptDir& attempt,
                            const std::string& trunk_checkpoint,
                            const std::optional<DeviceLaunch>& launch, const TrainerFds& fds) {
  SpawnOptions options;
  options.program = trainer_path;
  // The flag names are onset-train's contract (base/trainer_contract.h). It resumes only what
  // the coordinator named, never whatever else its directory may hold.
  options.args = {trainer::kFlagConfig,        attempt.config_path.string(),
                  trainer::kFlagThreads,       std::to_string(threads),
                  trainer::kFlagCheckpointDir, attempt.checkpoint_dir.string()};
  for (const std::filesystem::path& file : attempt.resume_files) {
    options.args.insert(options.args.end(), {trainer::kFlagResumeFrom, file.string()});
  }
  if (fds.lock >= 0) options.pass_fds.emplace_back(fds.lock, trainer::kTrainerLockFd);
  if (fds.supervisor >= 0) {
    options.pass_fds.emplace_back(fds.supervisor, trainer::kSupervisorFd);
    options.args.insert(options.args.end(),
                        {trainer::kFlagSupervisorFd, std::to_string(trainer::kSupervisorFd)});
  }
  if (!trunk_checkpoint.empty()) {
    options.args.insert(options.args.end(), {trainer::kFlagBranchFrom, trunk_checkpoint});
  }
  // The coordinator's token is the worker's: a trainer (and its ranks) never needs it.
  options.unset_env = {"ONSET_TOKEN", "ONSET_TOKEN_FILE"};
  options.env["OMP_NUM_THREADS"] = std::to_string(threads);
  options.env["MKL_NUM_THREADS"] = std::to_string(threads);
  if (launch) {
    options.args.insert(options.args.end(), {trainer::kFlagDevice, launch->device});
    if (launch->nproc > 1) {
      options.args.insert(options.args.end(), {trainer::kFlagNproc, std::to_string(launch->nproc)});
    }
    options.env["CUDA_VISIBLE_DEVICES"] = launch->cuda_visible_devices;
  }
  options.working_dir = attempt.dir.string();
  return options;
}

std::string DescribeLaunch(const std::vector<std::string>& devices,
                           const std::optional<DeviceLaunch>& launch) {
  if (!launch) return "";
  return absl::StrCat(" on ", absl::StrJoin(devices, ","), " (--device ", launch->device,
                      " --nproc ", launch->nproc, ")");
}

}  // namespace onset::worker
