// The claim rule: which waiting cell a worker with free devices is handed next. Stated here once;
// SqliteStore::ClaimNextCell runs the same rule as an indexed query over (state, ready, id), and
// tests/coordinator/store/claim_rule_agreement_test.cc checks on random queues that the two pick
// the same cell.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "onset/v1/onset.pb.h"

namespace onset::coordinator {

// What the rule looks at in a cell.
struct WaitingCell {
  v1::CellState state = v1::CELL_STATE_QUEUED;
  int64_t retry_at_unix_ms = 0;  // a cell in backoff may run from then on
  int devices = 1;               // devices one attempt of it needs
  // False only for a WSD branch whose trunk has not yet reported the checkpoint it starts from.
  bool ready = true;
};

// A cell may be claimed now when it is queued, or in backoff with its retry time come; it needs
// no more devices than are free; and it is ready. Cells in any other state never are.
bool Claimable(const WaitingCell& cell, int64_t now_unix_ms, int free_devices);

// The first claimable cell of `queue` (in queue order: submission order, the cells' rows), by
// index; nullopt when none is. A cell that does not fit or is not ready is passed over, never
// waited for: it holds up none behind it.
std::optional<size_t> NextClaim(const std::vector<WaitingCell>& queue, int64_t now_unix_ms,
                                int free_devices);

}  // namespace onset::coordinator
