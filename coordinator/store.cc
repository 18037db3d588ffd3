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
  }
  return "queued";
}

std::optional<CellState> CellStateFromName(const std::string& name) {
  for (CellState s : {CellState::kQueued, CellState::kRunning, CellState::kSucceeded,
                      CellState::kFailed}) {
    if (name == CellStateName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace onset::coordinator
