#include "coordinator/cells/cell_transitions.h"

namespace onset::coordinator {

CellTransition TransitionAtAttemptEnd(const AttemptEndInput& in) {
  CellTransition t;
  t.outcome = "failed";
  t.failures = in.failures;
  t.reason = in.end.reason;
  if (in.lost) {
    t.outcome = "lost";
    t.failure = FailureClass::kLost;
  } else {
    switch (in.end.outcome) {
      case AttemptOutcome::kSucceeded:
        t.outcome = "succeeded";
        t.next = CellState::kSucceeded;
        break;
      case AttemptOutcome::kDiverged:
        t.outcome = "diverged";
        t.next = CellState::kDiverged;
        break;
      case AttemptOutcome::kHandedBack:
        t.outcome = "handed_back";
        t.next = CellState::kQueued;
        break;
      case AttemptOutcome::kCancelled:
        t.outcome = "cancelled";
        t.next = CellState::kCancelled;
        break;
      case AttemptOutcome::kFailed:
        t.failure = ClassifyFailure(in.end.exit_code, in.end.signal, in.end.stderr_tail);
        t.reason = DescribeFailure(t.failure, in.end.exit_code, in.end.signal, in.end.reason);
        break;
    }
  }
  if (t.failure != FailureClass::kNone) {
    t.failures += (t.failure == FailureClass::kCrash || t.failure == FailureClass::kLost) ? 1 : 0;
    if (in.policy.Retries(t.failure, t.failures)) {
      t.next = CellState::kBackoff;
      t.retry_at_unix_ms = in.now_unix_ms + in.policy.Backoff(t.failures).count();
    } else {
      t.next = CellState::kFailed;
    }
  }
  // A cancelled cell stays cancelled whatever its last attempt did, unless it finished. The
  // failure (and a backoff time computed for it) is still recorded.
  if (in.cell_state == CellState::kCancelled && t.next != CellState::kSucceeded) {
    t.next = CellState::kCancelled;
    if (!in.lost && in.end.outcome != AttemptOutcome::kFailed) t.outcome = "cancelled";
  }
  return t;
}

}  // namespace onset::coordinator
