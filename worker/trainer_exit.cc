#include "worker/trainer_exit.h"

namespace onset::worker {

TrainerExit ClassifyTrainerExit(const ExitStatus& status, TrainerStop stop) {
  switch (stop) {
    case TrainerStop::kCellCancelled:
      return {JobOutcome::kCancelled, "cancelled"};
    case TrainerStop::kWorkerStopped:
      return {JobOutcome::kHandedBack, "worker stopped"};
    case TrainerStop::kNone:
      break;
  }
  if (!status.Exited()) return {JobOutcome::kFailed, status.ToString()};
  switch (status.exit_code) {
    case trainer::kExitOk:
      return {JobOutcome::kSucceeded, ""};
    case trainer::kExitDiverged:
      return {JobOutcome::kDiverged, "diverged: the training loss was not finite"};
    case trainer::kExitStopped:
      // Stopped by someone else, after which it checkpointed: a cluster's scheduler signals
      // every process of a job it preempts, the trainer often first. The cell is handed back.
      return {JobOutcome::kHandedBack, "trainer stopped by a signal"};
    default:
      return {JobOutcome::kFailed, status.ToString()};
  }
}

}  // namespace onset::worker
