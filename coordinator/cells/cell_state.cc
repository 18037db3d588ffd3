#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {

v1::CellState ToWire(CellState state) {
  switch (state) {
    case CellState::kQueued:
      return v1::CELL_STATE_QUEUED;
    case CellState::kRunning:
      return v1::CELL_STATE_RUNNING;
    case CellState::kSucceeded:
      return v1::CELL_STATE_SUCCEEDED;
    case CellState::kFailed:
      return v1::CELL_STATE_FAILED;
    case CellState::kDiverged:
      return v1::CELL_STATE_DIVERGED;
    case CellState::kCancelled:
      return v1::CELL_STATE_CANCELLED;
    case CellState::kBackoff:
      return v1::CELL_STATE_BACKOFF;
  }
  return v1::CELL_STATE_UNSPECIFIED;
}

std::optional<CellState> FromWire(v1::CellState state) {
  for (CellState s :
       {CellState::kQueued, CellState::kRunning, CellState::kSucceeded, CellState::kFailed,
        CellState::kDiverged, CellState::kCancelled, CellState::kBackoff}) {
    if (ToWire(s) == state) return s;
  }
  return std::nullopt;
}

const char* CellStateName(CellState state) {
  // The wire's names are string literals, so the view is NUL-terminated.
  return wire::StateName(ToWire(state)).data();
}

std::optional<CellState> CellStateFromName(const std::string& name) {
  std::optional<v1::CellState> state = wire::StateFromName(name);
  return state ? FromWire(*state) : std::nullopt;
}

}  // namespace onset::coordinator
