#include "coordinator/cells/claim_rule.h"

namespace onset::coordinator {

bool Claimable(const WaitingCell& cell, int64_t now_unix_ms, int free_devices) {
  const bool due = cell.state == v1::CELL_STATE_QUEUED ||
                   (cell.state == v1::CELL_STATE_BACKOFF && cell.retry_at_unix_ms <= now_unix_ms);
  return due && cell.devices <= free_devices && cell.ready;
}

std::optional<size_t> NextClaim(const std::vector<WaitingCell>& queue, int64_t now_unix_ms,
                                int free_devices) {
  for (size_t i = 0; i < queue.size(); ++i) {
    if (Claimable(queue[i], now_unix_ms, free_devices)) return i;
  }
  return std::nullopt;
}

}  // namespace onset::coordinator
