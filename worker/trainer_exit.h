// How a trainer's exit becomes a job's outcome. onset-train's exit codes are its contract's
// (base/trainer_contract.h): 0 ok, 3 diverged (a result of its own, JobOutcome::kDiverged, a
// cell the coordinator never retries, not a failure), 4 stopped by a SIGTERM or SIGINT after a
// checkpoint (the cell is handed back, not failed); any other code or a signal is a failure.
#pragma once

#include <string>

#include "base/trainer_contract.h"
#include "worker/coordinator_client.h"
#include "worker/process_launcher.h"

namespace onset::worker {

// Whether the worker ended the trainer itself (SIGTERM, then SIGKILL after a grace), and why.
enum class TrainerStop {
  kNone,           // it ran until it exited on its own
  kWorkerStopped,  // the worker is stopping
  kCellCancelled,  // the coordinator said the cell was cancelled
};

struct TrainerExit {
  JobOutcome outcome = JobOutcome::kFailed;
  std::string reason;  // one line, empty on success
};

// What to report for a trainer that ended with `status`, stopped by the worker as `stop` says.
// A stop by the worker decides the outcome whatever the exit status.
TrainerExit ClassifyTrainerExit(const ExitStatus& status, TrainerStop stop = TrainerStop::kNone);

}  // namespace onset::worker
