// The cell lifecycle as one pure state machine: every event that changes a cell or its attempts
// (a claim, a worker's call for an attempt, an attempt's end as its worker reported it, a lease
// that expired, an attempt handed back, a cancel, a rerun, a trunk that ended or grew) goes
// through Apply(), which says what the cell becomes, how its attempt ends and what else the store
// must do. The store loads a cell's CellLife, applies the event and writes the result in one
// transaction; it keeps no lifecycle rule of its own.
//
// The rules (docs/operating-onsetd.md states them for users):
//
//   One attempt at a time. A cell has at most one open attempt, and a cell with an open attempt is
//   running and is never claimed. Its current attempt is the latest one claimed.
//
//   Fencing. Every event from a worker names its attempt. One that is not the cell's current
//   attempt, or that has ended, changes nothing: the verdict is kFenced and its worker must stop
//   (the one exception, a late success, below).
//
//   Cancel and rerun of a running cell record an intent; the open attempt is told to stop at its
//   next call, and the intent is carried out when it ends: by its report, by its lease's expiry
//   (the cell then waits out stop_margin, the time in which its worker must have stopped the
//   trainer, before anyone may claim it), or when it is handed back. Of a cancel and a rerun the
//   last wins, but a fresh rerun stays until carried out: after "rerun --fresh, then cancel" the
//   cell ends cancelled without the old run's points, whatever the attempt did.
//
//   Lineage. The points and checkpoints a cell keeps are those of one run, its lineage. A fresh
//   rerun starts a new lineage (Step::new_lineage: the store discards the cell's points and
//   checkpoints) at once when no attempt is open, else when the open attempt ends, so that no
//   point of the discarded run can arrive afterwards.
//
//   Leases. An expired attempt ends "lost". It counts as a failure only when its worker ever
//   called for it; a claim whose reply never reached its worker is requeued without one. A
//   success reported for an attempt that ended lost is still taken while the cell has not been
//   claimed again and is of the same lineage (fencing makes that safe: no other attempt ran).
//
// Pure: no database and no clock (the time comes in Context), so every rule is tested alone and
// a property test runs random event sequences through it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "coordinator/cells/cell_state.h"
#include "coordinator/cells/failure_policy.h"

namespace onset::coordinator::life {

// What a cell's open attempt is to be followed by, once it ends: a cancel or a rerun, each with
// or without a fresh rerun pending (a new lineage).
enum class Intent { kNone, kCancel, kRerun, kRerunFresh, kCancelFresh };
// "", "cancel", "rerun", "rerun_fresh", "cancel_fresh": as stored in cells.intent.
const char* IntentName(Intent intent);
std::optional<Intent> IntentFromName(const std::string& name);

// How the cell's current attempt ended, as stored in attempts.outcome ("" while open).
inline constexpr char kOutcomeSucceeded[] = "succeeded";
inline constexpr char kOutcomeFailed[] = "failed";
inline constexpr char kOutcomeLost[] = "lost";
inline constexpr char kOutcomeDiverged[] = "diverged";
inline constexpr char kOutcomeHandedBack[] = "handed_back";
inline constexpr char kOutcomeCancelled[] = "cancelled";

// What the lifecycle knows of a cell: the lifecycle columns of its row and its current attempt.
struct CellLife {
  CellState state = CellState::kQueued;
  int failures = 0;              // counted failures since it was last queued by hand
  int64_t retry_at_unix_ms = 0;  // state kBackoff: claimable from then on
  Intent intent = Intent::kNone;
  int lineage = 1;  // the run the cell's points and checkpoints belong to

  // The current attempt: the latest claimed; 0 before the first.
  int attempt = 0;
  bool attempt_open = false;  // it has not ended
  int attempt_lineage = 0;    // the lineage it ran in
  bool contacted = false;     // its worker called for it (heartbeat, metrics, logs, report)
  std::string outcome;        // how it ended (kOutcome*); "" while open
  FailureClass failure = FailureClass::kNone;  // why it failed, when it did
};

// A trunk's own rule at the end of an attempt that reported success (docs/wsd-trunks.md): a
// trunk is done when its checkpoint at its budget, where its last branch starts, was recorded.
struct TrunkEnd {
  bool is_trunk = false;
  bool checkpoint_at_budget = false;  // that checkpoint was recorded
  bool extended = false;              // its budget grew past what it reached while it ran
  int64_t tokens_budget = 0;
};

// The events. Those naming an `attempt` come from (or concern) that attempt of the cell.
struct Claim {};  // a worker claims the cell
struct Contact {  // a heartbeat, metric points or log lines of an attempt
  int attempt = 0;
};
struct Report {  // the attempt's worker reports how it ended
  int attempt = 0;
  AttemptEnd end;
  TrunkEnd trunk;
};
struct Expire {  // the attempt's lease expired: no word from its worker in time
  int attempt = 0;
  std::string reason;  // e.g. "lease expired: no heartbeat for 30000 ms"
};
struct HandBack {      // the attempt is known to have stopped without a report (its
  int attempt = 0;     // worker deregistered, or `onset run` restarted after its
  std::string reason;  // trainer was gone): queued again, no failure counted
};
struct Cancel {};  // `onset cancel`
struct Rerun {     // `onset rerun [--fresh]`
  bool fresh = false;
};
struct TrunkEnded {  // the cell is a branch still waiting for its trunk's checkpoint
  CellState trunk_state = CellState::kFailed;  // and its trunk ended for good in this state
  std::string note;
};
struct Extend {};  // the cell is a trunk whose budget grew (a resubmitted study)

using Event =
    std::variant<Claim, Contact, Report, Expire, HandBack, Cancel, Rerun, TrunkEnded, Extend>;

struct Context {
  RetryPolicy policy;
  int64_t now_unix_ms = 0;
  // After a lease expires, how long its worker may still take to stop the trainer (it stops it
  // before its own view of the lease runs out): the cell is not claimed before.
  int64_t stop_margin_ms = 0;
  // A claim numbers its attempt above this as well as above the cell's last one: the floor of the
  // database's generation (db/instance.h), so that no two generations share an attempt number.
  int attempt_floor = 0;
};

enum class Verdict {
  kApplied,       // the event changed the cell (or, a Contact, was accepted)
  kUnchanged,     // nothing to do (e.g. a cancel of a cell that has ended)
  kFenced,        // an event from an attempt that is not the cell's current open one: stop it
  kNotClaimable,  // a claim of a cell that may not be claimed now
};

// How an attempt ends, for attempts.outcome, .failure_class and .reason.
struct AttemptClose {
  std::string outcome;  // kOutcome*
  FailureClass failure = FailureClass::kNone;
  std::string reason;  // one line; a failure's is described
};

struct Step {
  Verdict verdict = Verdict::kUnchanged;
  std::string message;  // kFenced, kNotClaimable: why, for the caller
  CellLife next;        // the cell afterwards (the cell as it was unless kApplied)
  // The current attempt ends now (its row gets these), or, with late_success, its end is
  // rewritten as a success.
  std::optional<AttemptClose> close;
  bool late_success = false;
  // kApplied Contact: the attempt must stop (a cancel or rerun waits for its end).
  bool stop = false;
  // A new lineage begins: the store discards the cell's points and checkpoints.
  bool new_lineage = false;
  // The cell ended for good (failed, diverged or cancelled) by this step: a trunk's waiting
  // branches end with it.
  bool ended_for_good = false;
};

// "trunk ended without its checkpoint at N tokens": why a trunk attempt that reported success
// without the checkpoint at its budget counts as failed.
std::string TrunkMissingCheckpointReason(int64_t tokens);

// The one transition function. Never fails: an event that does not apply says so in the verdict.
Step Apply(const CellLife& cell, const Event& event, const Context& context);

// Whether the cell, as it is, may be claimed at `now_unix_ms` as far as its lifecycle goes (the
// claim rule, claim_rule.h, adds devices and readiness).
bool Claimable(const CellLife& cell, int64_t now_unix_ms);

// The state a rerun's selection (rerun_selection.h) sees: a running cell whose pending intent is
// a cancel counts as cancelled, so that "cancel, then rerun" of a running cell reruns it.
CellState SelectedAs(CellState state, Intent intent);

// The invariants every CellLife reachable from a new cell keeps; "" when it keeps them, else the
// first it breaks (for the property test and the store's consistency check).
std::string CheckInvariants(const CellLife& cell, const RetryPolicy& policy);

}  // namespace onset::coordinator::life
