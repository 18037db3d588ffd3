// How a trainer's exit becomes a job's outcome. onset-train's exit codes are named here, the one
// place in the worker that knows them.
#pragma once

#include <string>

#include "worker/coordinator_client.h"
#include "worker/process_launcher.h"

namespace onset::worker {

// onset-train's exit codes.
inline constexpr int kTrainerExitOk = 0;
inline constexpr int kTrainerExitRuntimeError = 1;  // anything that went wrong while running
inline constexpr int kTrainerExitUsage = 2;         // bad flags, unreadable or invalid config
// The training loss was not finite: a result of its own (JobOutcome::kDiverged, a cell the
// coordinator never retries), not a failure.
inline constexpr int kTrainerExitDiverged = 3;
// A SIGTERM or SIGINT made it checkpoint and stop: the cell is handed back, not failed.
inline constexpr int kTrainerExitStopped = 4;

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
