#include "coordinator/store.h"

namespace onset::coordinator {

const char* CellStateName(CellState state) {
  switch (state) {
    case CellState::kQueued:
      return "queued";
    case CellState::kRunning:
      return "running";
    case CellState::kSucceeded:
      return "succeeded";
    case CellState::kFailed:
      return "failed";
    case CellState::kDiverged:
      return "diverged";
    case CellState::kCancelled:
      return "cancelled";
    case CellState::kBackoff:
      return "backoff";
  }
  return "queued";
}

std::optional<CellState> CellStateFromName(const std::string& name) {
  for (CellState s : {CellState::kQueued, CellState::kRunning, CellState::kSucceeded,
                      CellState::kFailed, CellState::kDiverged, CellState::kCancelled,
                      CellState::kBackoff}) {
    if (name == CellStateName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace onset::coordinator
