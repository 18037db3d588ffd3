// WSD trunks and branches in the coordinator's rows (docs/schema.md): when a branch may run.
// (What becomes of the branches still waiting when their trunk ends for good is the lifecycle's
// TrunkEnded, sqlite_lifecycle.h.) Each function runs inside the caller's write transaction.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/metric_names.h"
#include "coordinator/store/store.h"
#include "db/sqlite.h"

namespace onset::coordinator::trunks {

// The metric a trainer reports once a checkpoint file is durably written, at its tokens: a
// branch may start once its trunk has reported it at the branch's branch_tokens.
inline constexpr const char* kCheckpointMetric = metric::kCheckpointBytes;

// SQL true when the cells row named `alias` may be claimed as far as its role goes: it is not a
// branch, or its trunk has reported the checkpoint it starts from. Read from the row's `ready`
// column, which the functions below keep in step with the trunk's metrics, so that the claim
// walks the index (state, ready, id) rather than testing every waiting branch.
std::string ClaimableRoleSql(const std::string& alias);

// The trunk `trunk_row` reported kCheckpointMetric at `tokens`: its branches starting there may
// run now.
absl::Status MarkBranchesReady(db::Connection& db, int64_t trunk_row, int64_t tokens);

// The branches of `cell_row` (if it is a trunk) wait again for the checkpoints their trunk
// reports: its metrics were forgotten (onset rerun --fresh).
absl::Status MarkBranchesWaiting(db::Connection& db, int64_t cell_row);

// SQL for the `ready` value of the branch row named `alias`, from its trunk's metrics (used when
// a branch is stored).
std::string BranchReadySql(const std::string& alias);

// Whether cell row `cell_row` reported kCheckpointMetric at `tokens`.
absl::StatusOr<bool> HasCheckpointPoint(db::Connection& db, int64_t cell_row, int64_t tokens);

// "trunk ID STATE: REASON" (": REASON" left out when empty): the note of a branch that ended
// because its trunk did.
std::string TrunkEndedNote(const std::string& trunk_id, CellState trunk_state,
                           const std::string& reason);

}  // namespace onset::coordinator::trunks
