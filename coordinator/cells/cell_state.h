// The words of a cell's lifecycle, shared by the state machine, the store and the services: the
// states a cell is in, and how an attempt at it ended as its worker saw it. Pure.
#pragma once

#include <optional>
#include <string>

#include "proto/cell_names.h"

namespace onset::coordinator {

// backoff: waiting out the delay before a retry (failure_policy.h); claimable from retry_at on.
enum class CellState { kQueued, kRunning, kSucceeded, kFailed, kDiverged, kCancelled, kBackoff };
// The state on the wire, and back (nullopt for CELL_STATE_UNSPECIFIED).
v1::CellState ToWire(CellState state);
std::optional<CellState> FromWire(v1::CellState state);
// The wire's names (proto/cell_names.h), stored and shown: "queued", "running", "succeeded",
// "failed", "diverged", "cancelled", "backoff".
const char* CellStateName(CellState state);
std::optional<CellState> CellStateFromName(const std::string& name);

// What the worker saw: kDiverged when the trainer reported a non-finite loss, kHandedBack when
// the worker was asked to stop and the trainer checkpointed, kCancelled when the cell was
// cancelled under it. The store classifies kFailed ones (failure_policy.h).
enum class AttemptOutcome { kSucceeded, kFailed, kDiverged, kHandedBack, kCancelled };

struct AttemptEnd {
  AttemptOutcome outcome = AttemptOutcome::kFailed;
  std::optional<int> exit_code;  // the trainer's exit status, when it exited
  int signal = 0;                // the signal that killed it, 0 for none
  std::string reason;            // one line
  std::string stderr_tail;
};

}  // namespace onset::coordinator
