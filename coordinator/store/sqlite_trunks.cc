#include "coordinator/store/sqlite_trunks.h"

#include "common/status_macros.h"

namespace onset::coordinator::trunks {

std::string ClaimableRoleSql(const std::string& alias) { return "(" + alias + ".ready = 1)"; }

std::string BranchReadySql(const std::string& alias) {
  return "EXISTS (SELECT 1 FROM metrics m WHERE m.cell_id = " + alias + ".trunk_id AND m.name = '" +
         kCheckpointMetric + "' AND m.tokens = " + alias + ".branch_tokens)";
}

absl::Status MarkBranchesReady(db::Connection& db, int64_t trunk_row, int64_t tokens) {
  ONSET_ASSIGN_OR_RETURN(db::Statement ready,
                         db.Prepare("UPDATE cells SET ready = 1 WHERE trunk_id = ? AND "
                                    "role = 'branch' AND branch_tokens = ? AND ready = 0"));
  ready.BindAll(trunk_row, tokens);
  return ready.Run();
}

absl::Status MarkBranchesWaiting(db::Connection& db, int64_t cell_row) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement waiting,
      db.Prepare("UPDATE cells SET ready = 0 WHERE trunk_id = ? AND role = 'branch'"));
  waiting.BindAll(cell_row);
  return waiting.Run();
}

absl::StatusOr<bool> HasCheckpointPoint(db::Connection& db, int64_t cell_row, int64_t tokens) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT 1 FROM metrics WHERE cell_id = ? AND name = ? AND tokens = ?"));
  stmt.BindAll(cell_row, kCheckpointMetric, tokens);
  return stmt.Step();
}

std::string MissingCheckpointReason(int64_t tokens) {
  return "trunk ended without its checkpoint at " + std::to_string(tokens) + " tokens";
}

std::string TrunkEndedNote(const std::string& trunk_id, CellState trunk_state,
                           const std::string& reason) {
  std::string note = "trunk " + trunk_id + " " + CellStateName(trunk_state);
  if (!reason.empty()) note += ": " + reason;
  return note;
}

absl::StatusOr<int> EndWaitingBranches(db::Connection& db, int64_t trunk_row,
                                       const std::string& trunk_id, CellState trunk_state,
                                       const std::string& reason, int64_t now_unix_ms) {
  const CellState next =
      trunk_state == CellState::kDiverged ? CellState::kDiverged : CellState::kFailed;
  // Notes are shown with a cell like an attempt's reason, and bounded like one.
  constexpr size_t kMaxNoteBytes = 4 * 1024;
  std::string note = TrunkEndedNote(trunk_id, trunk_state, reason);
  if (note.size() > kMaxNoteBytes) {
    size_t cut = kMaxNoteBytes;
    while (cut > 0 && (static_cast<unsigned char>(note[cut]) & 0xC0) == 0x80) --cut;
    note.resize(cut);
  }
  ONSET_ASSIGN_OR_RETURN(
      db::Statement end,
      db.Prepare("UPDATE cells SET state = ?1, note = ?2, updated_at = ?3, retry_at = 0 "
                 "WHERE trunk_id = ?4 AND role = 'branch' AND state IN ('queued', 'backoff') "
                 "AND ready = 0"));
  end.BindAll(CellStateName(next), note, now_unix_ms, trunk_row);
  ONSET_RETURN_IF_ERROR(end.Run());
  return static_cast<int>(db.Changes());
}

}  // namespace onset::coordinator::trunks
