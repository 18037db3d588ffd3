#include "coordinator/cells/rerun_selection.h"

namespace onset::coordinator {

std::vector<CellState> DefaultRerunStates() {
  return {CellState::kFailed, CellState::kDiverged, CellState::kCancelled};
}

absl::StatusOr<std::vector<CellState>> RerunStates(
    const std::vector<std::optional<CellState>>& named) {
  std::vector<CellState> states;
  for (const std::optional<CellState>& state : named) {
    if (!state || *state == CellState::kQueued) {
      return absl::InvalidArgumentError(
          "states: queued cells run already; a rerun takes failed, diverged, cancelled, "
          "succeeded, backoff or running cells");
    }
    states.push_back(*state);
  }
  if (states.empty()) states = DefaultRerunStates();
  return states;
}

}  // namespace onset::coordinator
