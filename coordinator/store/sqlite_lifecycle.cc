#include "coordinator/store/sqlite_lifecycle.h"

#include <vector>

#include "base/metric_names.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/sqlite_trunks.h"

namespace onset::coordinator::lifecycle {
namespace {

// Stored text is capped so one chatty failure cannot bloat the database.
constexpr size_t kMaxReasonBytes = 4 * 1024;
constexpr size_t kMaxStderrTailBytes = 64 * 1024;

absl::Status WriteAttempt(db::Connection& db, const LoadedCell& cell, const life::Step& step,
                          const life::Event& event, int64_t now) {
  if (cell.attempt_row == 0) return absl::OkStatus();
  if (!step.close) {
    if (step.next.contacted && !cell.life.contacted) {
      ONSET_ASSIGN_OR_RETURN(db::Statement confirm,
                             db.Prepare("UPDATE attempts SET contacted = 1 WHERE id = ?"));
      confirm.BindAll(cell.attempt_row);
      return confirm.Run();
    }
    return absl::OkStatus();
  }
  // The trainer's exit as its worker saw it: only a report says.
  std::optional<int> exit_code;
  int signal = 0;
  std::string stderr_tail;
  if (const auto* report = std::get_if<life::Report>(&event)) {
    exit_code = report->end.exit_code;
    signal = report->end.signal;
    stderr_tail = report->end.stderr_tail;
  }
  ONSET_ASSIGN_OR_RETURN(
      db::Statement update,
      db.Prepare("UPDATE attempts SET ended_at = ?, outcome = ?, exit_code = ?, signal = ?, "
                 "reason = ?, stderr_tail = ?, failure_class = ?, contacted = ? WHERE id = ?"));
  update.BindAll(now, step.close->outcome, exit_code, signal,
                 std::string(common::TailUtf8(step.close->reason, kMaxReasonBytes)),
                 std::string(common::TailUtf8(stderr_tail, kMaxStderrTailBytes)),
                 FailureClassName(step.close->failure), step.next.contacted ? 1 : 0,
                 cell.attempt_row);
  return update.Run();
}

absl::Status WriteCell(db::Connection& db, const LoadedCell& cell, const life::Step& step,
                       int64_t now, const std::string& note) {
  const life::CellLife& next = step.next;
  const life::CellLife& was = cell.life;
  const bool same = next.state == was.state && next.failures == was.failures &&
                    next.retry_at_unix_ms == was.retry_at_unix_ms && next.intent == was.intent &&
                    next.lineage == was.lineage && note.empty();
  // A contact (a heartbeat, a batch of points) changes no column of the cell.
  if (same && !step.new_lineage) return absl::OkStatus();
  // A note says why a cell ended without an attempt of its own; it goes once the cell may run.
  const bool waits = next.state == CellState::kQueued || next.state == CellState::kBackoff ||
                     next.state == CellState::kRunning;
  ONSET_ASSIGN_OR_RETURN(
      db::Statement update,
      db.Prepare("UPDATE cells SET state = ?1, failures = ?2, retry_at = ?3, intent = ?4, "
                 "lineage = ?5, updated_at = ?6, "
                 "note = CASE WHEN ?7 <> '' THEN ?7 WHEN ?8 THEN '' ELSE note END WHERE id = ?9"));
  update.BindAll(CellStateName(next.state), next.failures, next.retry_at_unix_ms,
                 life::IntentName(next.intent), next.lineage, now, note, waits ? 1 : 0, cell.row);
  ONSET_RETURN_IF_ERROR(update.Run());
  if (step.new_lineage) {
    // From scratch: the old run's curves would mix with the new one's, and its checkpoints (the
    // checkpoint/bytes points) must not be resumed.
    ONSET_ASSIGN_OR_RETURN(db::Statement forget,
                           db.Prepare("DELETE FROM metrics WHERE cell_id = ?"));
    forget.BindAll(cell.row);
    ONSET_RETURN_IF_ERROR(forget.Run());
    ONSET_ASSIGN_OR_RETURN(
        db::Statement reset,
        db.Prepare("UPDATE cells SET tokens_done = 0, tokens_per_second = 0, latest_loss = NULL "
                   "WHERE id = ?"));
    reset.BindAll(cell.row);
    ONSET_RETURN_IF_ERROR(reset.Run());
    if (cell.role == CellRole::kTrunk)
      ONSET_RETURN_IF_ERROR(trunks::MarkBranchesWaiting(db, cell.row));
  }
  if (next.state == CellState::kSucceeded && cell.life.state != CellState::kSucceeded) {
    // Progress comes with heartbeats, every few seconds, and a short run (a WSD branch) may end
    // before its first: a success shows the furthest point its trainer reported (the "done"
    // event carries the final token count), never less than the last heartbeat said. Points
    // are bounded by the attempt's max_tokens when they are stored.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement done,
        db.Prepare("UPDATE cells SET tokens_done = MAX(tokens_done, (SELECT COALESCE(MAX(tokens), "
                   "0) FROM metrics WHERE cell_id = ?1)) WHERE id = ?1"));
    done.BindAll(cell.row);
    ONSET_RETURN_IF_ERROR(done.Run());
  }
  return absl::OkStatus();
}

// The trunk `cell` ended for good: its branches that still wait for their checkpoint end too.
absl::Status EndWaitingBranches(db::Connection& db, const LoadedCell& trunk, const life::Step& step,
                                const life::Context& context) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement waiting,
      db.Prepare("SELECT id FROM cells WHERE trunk_id = ? AND role = 'branch' AND "
                 "state IN ('queued', 'backoff') AND ready = 0 ORDER BY id"));
  waiting.BindAll(trunk.row);
  std::vector<int64_t> branches;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, waiting.Step());
    if (!row) break;
    branches.push_back(waiting.Int(0));
  }
  const std::string note =
      trunks::TrunkEndedNote(trunk.hash, step.next.state, step.close ? step.close->reason : "");
  for (int64_t row : branches) {
    ONSET_ASSIGN_OR_RETURN(LoadedCell branch, LoadCell(db, row));
    ONSET_RETURN_IF_ERROR(
        Apply(db, branch, life::TrunkEnded{step.next.state, note}, context, note).status());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedCell> LoadCell(db::Connection& db, int64_t cell_row) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT c.hash, c.role, c.tokens_done, c.tokens_budget, c.state, c.failures, "
                 "c.retry_at, c.intent, c.lineage, a.id, a.attempt, a.ended_at IS NULL, "
                 "a.lineage, a.contacted, a.outcome, a.failure_class "
                 "FROM cells c LEFT JOIN attempts a ON a.id = (SELECT id FROM attempts "
                 "WHERE cell_id = c.id ORDER BY attempt DESC LIMIT 1) WHERE c.id = ?"));
  stmt.BindAll(cell_row);
  ONSET_ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) return absl::NotFoundError("cell row " + std::to_string(cell_row) + " not found");
  LoadedCell cell;
  cell.row = cell_row;
  cell.hash = stmt.Text(0);
  cell.role = wire::RoleFromName(stmt.Text(1)).value_or(CellRole::kCell);
  cell.tokens_done = stmt.Int(2);
  cell.tokens_budget = stmt.Int(3);
  life::CellLife& life = cell.life;
  life.state = CellStateFromName(stmt.Text(4)).value_or(CellState::kQueued);
  life.failures = static_cast<int>(stmt.Int(5));
  life.retry_at_unix_ms = stmt.Int(6);
  life.intent = life::IntentFromName(stmt.Text(7)).value_or(life::Intent::kNone);
  life.lineage = static_cast<int>(stmt.Int(8));
  if (!stmt.IsNull(9)) {
    cell.attempt_row = stmt.Int(9);
    life.attempt = static_cast<int>(stmt.Int(10));
    life.attempt_open = stmt.Int(11) != 0;
    life.attempt_lineage = static_cast<int>(stmt.Int(12));
    life.contacted = stmt.Int(13) != 0;
    life.outcome = stmt.Text(14);
    life.failure = FailureClassFromName(stmt.Text(15));
  }
  return cell;
}

absl::StatusOr<life::Step> Apply(db::Connection& db, const LoadedCell& cell,
                                 const life::Event& event, const life::Context& context,
                                 const std::string& note) {
  life::Step step = life::Apply(cell.life, event, context);
  if (step.verdict != life::Verdict::kApplied) return step;
  const int64_t now = context.now_unix_ms;
  // The attempt first: the state change's event (a trigger) reads its reason.
  ONSET_RETURN_IF_ERROR(WriteAttempt(db, cell, step, event, now));
  ONSET_RETURN_IF_ERROR(WriteCell(db, cell, step, now, note));
  if (step.ended_for_good && cell.role == CellRole::kTrunk) {
    ONSET_RETURN_IF_ERROR(EndWaitingBranches(db, cell, step, context));
  }
  return step;
}

}  // namespace onset::coordinator::lifecycle
