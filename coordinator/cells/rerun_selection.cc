#include "coordinator/cells/rerun_selection.h"

namespace onset::coordinator {

std::vector<CellState> DefaultRerunStates() {
  return {CellState::kFailed, CellState::kDiverged, CellState::kCancelled};
}

absl::StatusOr<std::vector<CellState>> RerunStates(
    const std::vector<std::optional<CellState>>& named) {
  std::vector<CellState> states;
  for (const std::optional<CellState>& state : named) {
    if (!state || *state == CellState::kRunning || *state == CellState::kQueued) {
      return absl::InvalidArgumentError(
          "states: only ended or waiting cells can be rerun (failed, diverged, cancelled, "
          "succeeded, backoff)");
    }
    states.push_back(*state);
  }
  if (states.empty()) states = DefaultRerunStates();
  return states;
}

}  // namespace onset::coordinator
