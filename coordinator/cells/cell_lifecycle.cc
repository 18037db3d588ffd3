#include "coordinator/cells/cell_lifecycle.h"

#include <algorithm>
#include <type_traits>

namespace onset::coordinator::life {
namespace {

bool EndedForGood(CellState s) {
  return s == CellState::kFailed || s == CellState::kDiverged || s == CellState::kCancelled;
}

std::string AttemptName(int attempt) { return "attempt " + std::to_string(attempt); }

Step Unchanged(const CellLife& cell) {
  Step step;
  step.next = cell;
  return step;
}

Step Fenced(const CellLife& cell, std::string message) {
  Step step = Unchanged(cell);
  step.verdict = Verdict::kFenced;
  step.message = std::move(message);
  return step;
}

// Why an event of `attempt` is fenced, for its worker.
std::string FenceMessage(const CellLife& cell, int attempt) {
  if (attempt != cell.attempt) {
    return AttemptName(attempt) + " is not the cell's current attempt (" +
           (cell.attempt == 0 ? std::string("none") : AttemptName(cell.attempt)) +
           "): stop it; nothing more is recorded for it";
  }
  return AttemptName(attempt) + " has ended (" + cell.outcome +
         "): stop it; nothing more is recorded for it";
}

// The cell once its open attempt has closed with `close`, before any intent is carried out.
void CloseAttempt(CellLife* cell, const AttemptClose& close) {
  cell->attempt_open = false;
  cell->outcome = close.outcome;
  cell->failure = close.failure;
}

// Carries out the pending intent of a cell whose attempt has just ended, `next` being the state
// the attempt's end alone would give. Returns whether a new lineage begins. `fence_until` is the
// earliest time the cell may run again (0: at once).
bool CarryOutIntent(CellLife* cell, int64_t fence_until) {
  const Intent intent = cell->intent;
  cell->intent = Intent::kNone;
  switch (intent) {
    case Intent::kNone:
      return false;
    case Intent::kCancel:
      // The work is done: a success stands.
      if (cell->state != CellState::kSucceeded) {
        cell->state = CellState::kCancelled;
        cell->retry_at_unix_ms = 0;
      }
      return false;
    case Intent::kCancelFresh:
      // A fresh rerun was asked for before the cancel: the run goes, finished or not.
      cell->state = CellState::kCancelled;
      cell->retry_at_unix_ms = 0;
      ++cell->lineage;
      return true;
    case Intent::kRerun:
    case Intent::kRerunFresh:
      cell->failures = 0;
      if (fence_until > 0) {
        cell->state = CellState::kBackoff;
        cell->retry_at_unix_ms = fence_until;
      } else {
        cell->state = CellState::kQueued;
        cell->retry_at_unix_ms = 0;
      }
      if (intent == Intent::kRerunFresh) {
        ++cell->lineage;
        return true;
      }
      return false;
  }
  return false;
}

// After a counted or uncounted failure: back off and retry, or fail for good.
void RetryOrFail(CellLife* cell, const AttemptClose& close, const Context& ctx,
                 int64_t not_before) {
  const bool counted =
      close.failure == FailureClass::kCrash || close.failure == FailureClass::kLost;
  if (counted) ++cell->failures;
  if (!ctx.policy.Retries(close.failure, cell->failures)) {
    cell->state = CellState::kFailed;
    cell->retry_at_unix_ms = 0;
    return;
  }
  const int64_t backoff = counted ? ctx.policy.Backoff(cell->failures).count() : 0;
  cell->state = CellState::kBackoff;
  cell->retry_at_unix_ms = std::max(ctx.now_unix_ms + backoff, not_before);
}

Step ApplyClaim(const CellLife& cell, const Context& ctx) {
  if (!Claimable(cell, ctx.now_unix_ms)) {
    Step step = Unchanged(cell);
    step.verdict = Verdict::kNotClaimable;
    step.message = std::string("the cell is ") + CellStateName(cell.state) +
                   (cell.attempt_open ? " with an open attempt" : "") + ": not claimable now";
    return step;
  }
  Step step;
  step.verdict = Verdict::kApplied;
  step.next = cell;
  CellLife& next = step.next;
  next.state = CellState::kRunning;
  next.retry_at_unix_ms = 0;
  next.attempt = std::max(cell.attempt, ctx.attempt_floor) + 1;
  next.attempt_open = true;
  next.attempt_lineage = cell.lineage;
  next.contacted = false;
  next.outcome.clear();
  next.failure = FailureClass::kNone;
  return step;
}

Step ApplyContact(const CellLife& cell, const Contact& e) {
  if (e.attempt != cell.attempt || !cell.attempt_open) {
    return Fenced(cell, FenceMessage(cell, e.attempt));
  }
  Step step;
  step.verdict = Verdict::kApplied;
  step.next = cell;
  step.next.contacted = true;
  step.stop = cell.intent != Intent::kNone;
  return step;
}

// The attempt's report, as the failure policy and the trunk rule classify it.
AttemptClose ClassifyReport(const Report& e, bool* trunk_extended) {
  AttemptEnd end = e.end;
  *trunk_extended = false;
  if (e.trunk.is_trunk && end.outcome == AttemptOutcome::kSucceeded &&
      !e.trunk.checkpoint_at_budget) {
    // Without its last checkpoint, a trunk extended while it ran trains on; any other failed.
    if (e.trunk.extended) {
      *trunk_extended = true;
    } else {
      end.outcome = AttemptOutcome::kFailed;
      end.reason = TrunkMissingCheckpointReason(e.trunk.tokens_budget);
    }
  }
  AttemptClose close;
  close.reason = end.reason;
  switch (end.outcome) {
    case AttemptOutcome::kSucceeded:
      close.outcome = kOutcomeSucceeded;
      break;
    case AttemptOutcome::kDiverged:
      close.outcome = kOutcomeDiverged;
      break;
    case AttemptOutcome::kHandedBack:
      close.outcome = kOutcomeHandedBack;
      break;
    case AttemptOutcome::kCancelled:
      close.outcome = kOutcomeCancelled;
      break;
    case AttemptOutcome::kFailed:
      close.outcome = kOutcomeFailed;
      close.failure = ClassifyFailure(end.exit_code, end.signal, end.stderr_tail);
      close.reason = DescribeFailure(close.failure, end.exit_code, end.signal, end.reason);
      break;
  }
  return close;
}

Step ApplyReport(const CellLife& cell, const Report& e, const Context& ctx) {
  bool extended = false;
  AttemptClose close = ClassifyReport(e, &extended);
  if (e.attempt != cell.attempt) return Fenced(cell, FenceMessage(cell, e.attempt));
  if (!cell.attempt_open) {
    // A success that arrives after its lease expired stands while no other attempt has run:
    // the cell has not been claimed again (it is the current attempt) and is of its lineage.
    const bool late_success = cell.outcome == kOutcomeLost && !extended &&
                              close.outcome == kOutcomeSucceeded &&
                              cell.attempt_lineage == cell.lineage;
    if (!late_success) return Fenced(cell, FenceMessage(cell, e.attempt));
    Step step;
    step.verdict = Verdict::kApplied;
    step.late_success = true;
    step.next = cell;
    CellLife& next = step.next;
    if (cell.failure == FailureClass::kLost) next.failures = std::max(0, next.failures - 1);
    next.state = CellState::kSucceeded;
    next.retry_at_unix_ms = 0;
    next.outcome = kOutcomeSucceeded;
    next.failure = FailureClass::kNone;
    next.contacted = true;
    close.reason = "succeeded after its lease had expired (no other attempt had run)";
    step.close = close;
    return step;
  }

  Step step;
  step.verdict = Verdict::kApplied;
  step.next = cell;
  CellLife& next = step.next;
  next.contacted = true;
  if (close.outcome == kOutcomeSucceeded) {
    // A trunk extended meanwhile did what it was given but is not done.
    next.state = extended ? CellState::kQueued : CellState::kSucceeded;
    next.retry_at_unix_ms = 0;
  } else if (close.outcome == kOutcomeDiverged) {
    next.state = CellState::kDiverged;
  } else if (close.outcome == kOutcomeHandedBack) {
    next.state = CellState::kQueued;
    next.retry_at_unix_ms = 0;
  } else if (close.outcome == kOutcomeCancelled) {
    // The worker stops an attempt only when told to; a cancel without an intent is a cancel.
    next.state = CellState::kCancelled;
    if (cell.intent == Intent::kNone) next.intent = Intent::kCancel;
  } else {
    RetryOrFail(&next, close, ctx, 0);
  }
  // A cancelled cell reports its attempt as cancelled, whatever stopped it, but a failure stands
  // (and a success, unless a fresh rerun discards it).
  const bool cancels = cell.intent == Intent::kCancel || cell.intent == Intent::kCancelFresh;
  if (cancels && close.outcome != kOutcomeFailed &&
      (cell.intent == Intent::kCancelFresh || !(close.outcome == kOutcomeSucceeded && !extended))) {
    close.outcome = kOutcomeCancelled;
  }
  CloseAttempt(&next, close);
  step.new_lineage = CarryOutIntent(&next, 0);
  step.close = close;
  step.ended_for_good = EndedForGood(next.state);
  return step;
}

Step ApplyExpire(const CellLife& cell, const Expire& e, const Context& ctx) {
  if (e.attempt != cell.attempt || !cell.attempt_open) return Unchanged(cell);
  AttemptClose close;
  close.outcome = kOutcomeLost;
  if (cell.contacted) {
    close.failure = FailureClass::kLost;
    close.reason = e.reason;
  } else {
    close.failure = FailureClass::kUnconfirmed;
    close.reason = "its worker never confirmed the claim (" + e.reason +
                   "): requeued without counting a failure";
  }
  Step step;
  step.verdict = Verdict::kApplied;
  step.next = cell;
  CellLife& next = step.next;
  // Its worker may still be stopping the trainer: nobody claims the cell before that time.
  const int64_t fence = ctx.now_unix_ms + std::max<int64_t>(ctx.stop_margin_ms, 0);
  RetryOrFail(&next, close, ctx, fence);
  CloseAttempt(&next, close);
  step.new_lineage = CarryOutIntent(&next, fence);
  step.close = close;
  step.ended_for_good = EndedForGood(next.state);
  return step;
}

Step ApplyHandBack(const CellLife& cell, const HandBack& e) {
  if (e.attempt != cell.attempt || !cell.attempt_open) return Unchanged(cell);
  AttemptClose close;
  close.outcome = kOutcomeHandedBack;
  close.reason = e.reason;
  Step step;
  step.verdict = Verdict::kApplied;
  step.next = cell;
  CellLife& next = step.next;
  next.state = CellState::kQueued;
  next.retry_at_unix_ms = 0;
  CloseAttempt(&next, close);
  step.new_lineage = CarryOutIntent(&next, 0);
  step.close = close;
  step.ended_for_good = EndedForGood(next.state);
  return step;
}

Step ApplyCancel(const CellLife& cell) {
  Step step = Unchanged(cell);
  if (cell.attempt_open) {
    // A fresh rerun asked for before stays: the cell ends cancelled without the old run's points.
    const bool fresh = cell.intent == Intent::kRerunFresh || cell.intent == Intent::kCancelFresh;
    const Intent next = fresh ? Intent::kCancelFresh : Intent::kCancel;
    if (cell.intent == next) return step;
    step.verdict = Verdict::kApplied;
    step.next.intent = next;
    return step;
  }
  if (cell.state != CellState::kQueued && cell.state != CellState::kBackoff) return step;
  step.verdict = Verdict::kApplied;
  step.next.state = CellState::kCancelled;
  step.next.retry_at_unix_ms = 0;
  step.ended_for_good = true;
  return step;
}

Step ApplyRerun(const CellLife& cell, const Rerun& e) {
  Step step = Unchanged(cell);
  step.verdict = Verdict::kApplied;
  if (cell.attempt_open) {
    const bool fresh =
        e.fresh || cell.intent == Intent::kRerunFresh || cell.intent == Intent::kCancelFresh;
    step.next.intent = fresh ? Intent::kRerunFresh : Intent::kRerun;
    return step;
  }
  CellLife& next = step.next;
  next.state = CellState::kQueued;
  next.retry_at_unix_ms = 0;
  next.failures = 0;
  if (e.fresh) {
    ++next.lineage;
    step.new_lineage = true;
  }
  return step;
}

Step ApplyTrunkEnded(const CellLife& cell, const TrunkEnded& e) {
  Step step = Unchanged(cell);
  if (cell.state != CellState::kQueued && cell.state != CellState::kBackoff) return step;
  step.verdict = Verdict::kApplied;
  step.next.state =
      e.trunk_state == CellState::kDiverged ? CellState::kDiverged : CellState::kFailed;
  step.next.retry_at_unix_ms = 0;
  step.ended_for_good = true;
  return step;
}

Step ApplyExtend(const CellLife& cell) {
  Step step = Unchanged(cell);
  if (cell.state != CellState::kSucceeded) return step;
  step.verdict = Verdict::kApplied;
  step.next.state = CellState::kQueued;
  step.next.failures = 0;
  return step;
}

}  // namespace

std::string TrunkMissingCheckpointReason(int64_t tokens) {
  return "trunk ended without its checkpoint at " + std::to_string(tokens) + " tokens";
}

const char* IntentName(Intent intent) {
  switch (intent) {
    case Intent::kNone:
      return "";
    case Intent::kCancel:
      return "cancel";
    case Intent::kRerun:
      return "rerun";
    case Intent::kRerunFresh:
      return "rerun_fresh";
    case Intent::kCancelFresh:
      return "cancel_fresh";
  }
  return "";
}

std::optional<Intent> IntentFromName(const std::string& name) {
  for (Intent i : {Intent::kNone, Intent::kCancel, Intent::kRerun, Intent::kRerunFresh,
                   Intent::kCancelFresh}) {
    if (name == IntentName(i)) return i;
  }
  return std::nullopt;
}

bool Claimable(const CellLife& cell, int64_t now_unix_ms) {
  if (cell.attempt_open) return false;
  if (cell.state == CellState::kQueued) return true;
  return cell.state == CellState::kBackoff && cell.retry_at_unix_ms <= now_unix_ms;
}

CellState SelectedAs(CellState state, Intent intent) {
  if (state == CellState::kRunning &&
      (intent == Intent::kCancel || intent == Intent::kCancelFresh)) {
    return CellState::kCancelled;
  }
  return state;
}

Step Apply(const CellLife& cell, const Event& event, const Context& context) {
  return std::visit(
      [&](const auto& e) -> Step {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, Claim>) {
          return ApplyClaim(cell, context);
        } else if constexpr (std::is_same_v<E, Contact>) {
          return ApplyContact(cell, e);
        } else if constexpr (std::is_same_v<E, Report>) {
          return ApplyReport(cell, e, context);
        } else if constexpr (std::is_same_v<E, Expire>) {
          return ApplyExpire(cell, e, context);
        } else if constexpr (std::is_same_v<E, HandBack>) {
          return ApplyHandBack(cell, e);
        } else if constexpr (std::is_same_v<E, Cancel>) {
          return ApplyCancel(cell);
        } else if constexpr (std::is_same_v<E, Rerun>) {
          return ApplyRerun(cell, e);
        } else if constexpr (std::is_same_v<E, TrunkEnded>) {
          return ApplyTrunkEnded(cell, e);
        } else {
          return ApplyExtend(cell);
        }
      },
      event);
}

std::string CheckInvariants(const CellLife& cell, const RetryPolicy& policy) {
  if (cell.attempt_open != (cell.state == CellState::kRunning)) {
    return "a cell is running exactly when its current attempt is open";
  }
  if (cell.intent != Intent::kNone && !cell.attempt_open) {
    return "an intent waits only for an open attempt";
  }
  if (cell.attempt < 0) return "attempt numbers start at 1";
  if (cell.attempt == 0 && (cell.attempt_open || !cell.outcome.empty())) {
    return "a cell without attempts has no attempt state";
  }
  if (cell.attempt_open && !cell.outcome.empty()) return "an open attempt has no outcome";
  if (cell.attempt > 0 && !cell.attempt_open && cell.outcome.empty()) {
    return "an ended attempt has an outcome";
  }
  if (cell.failures < 0 || cell.failures > policy.max_failures) {
    return "counted failures stay within 0..max_failures";
  }
  if (cell.lineage < 1 || cell.attempt_lineage > cell.lineage) {
    return "lineages start at 1 and an attempt's is never ahead of its cell's";
  }
  if (cell.attempt_open && cell.attempt_lineage != cell.lineage) {
    return "an open attempt runs in its cell's lineage";
  }
  return "";
}

}  // namespace onset::coordinator::life
