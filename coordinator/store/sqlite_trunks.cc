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

std::string TrunkEndedNote(const std::string& trunk_id, CellState trunk_state,
                           const std::string& reason) {
  std::string note = "trunk " + trunk_id + " " + CellStateName(trunk_state);
  if (!reason.empty()) note += ": " + reason;
  return note;
}

}  // namespace onset::coordinator::trunks
