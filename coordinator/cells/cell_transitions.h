// The cell state machine at the end of an attempt: from how the attempt ended (or that its
// lease was lost), the cell's stored state and counted failures, the retry policy and the time,
// what the store records for the attempt (outcome, failure class, reason) and for the cell (next
// state, counted failures, when it may run again).
//
//   succeeded    -> succeeded, even when the cell was cancelled meanwhile (the work is done).
//   diverged     -> diverged.
//   handed back  -> queued at once, no failure counted.
//   cancelled    -> cancelled.
//   failed, lost -> classified (failure_policy.h); crash and lost count a failure and back off
//                   while the policy retries them, the others fail at once.
// A cell cancelled while its attempt ran stays cancelled whatever else the attempt did, unless
// the attempt succeeded.
//
// Pure: no database, no clock (the time comes in), so every branch is tested alone.
#pragma once

#include <cstdint>
#include <string>

#include "coordinator/cells/cell_state.h"
#include "coordinator/cells/failure_policy.h"

namespace onset::coordinator {

// The cell's row and the attempt's end, as the store sees them when an attempt ends.
struct AttemptEndInput {
  CellState cell_state = CellState::kRunning;  // kCancelled once a cancel reached it
  int failures = 0;                            // the cell's counted failures before this attempt
  AttemptEnd end;     // what the worker reported; only `reason` counts for a lost lease
  bool lost = false;  // the lease expired or its worker is gone: no report came
  RetryPolicy policy;
  int64_t now_unix_ms = 0;
};

// What to write. The attempt always ends (at now_unix_ms) and its lease with it.
struct CellTransition {
  // attempts.outcome: "succeeded", "failed", "lost", "diverged", "handed_back", "cancelled".
  std::string outcome;
  FailureClass failure = FailureClass::kNone;
  std::string reason;  // the attempt's one-line reason (a failure's is described)
  CellState next = CellState::kFailed;
  int failures = 0;              // the cell's counted failures, this attempt's included
  int64_t retry_at_unix_ms = 0;  // when a backoff ends; 0 when none was computed
};

CellTransition TransitionAtAttemptEnd(const AttemptEndInput& in);

}  // namespace onset::coordinator
