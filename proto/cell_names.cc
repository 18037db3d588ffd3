#include "proto/cell_names.h"

namespace onset::wire {

std::string_view StateName(v1::CellState state) {
  switch (state) {
    case v1::CELL_STATE_QUEUED:
      return "queued";
    case v1::CELL_STATE_RUNNING:
      return "running";
    case v1::CELL_STATE_SUCCEEDED:
      return "succeeded";
    case v1::CELL_STATE_FAILED:
      return "failed";
    case v1::CELL_STATE_DIVERGED:
      return "diverged";
    case v1::CELL_STATE_CANCELLED:
      return "cancelled";
    case v1::CELL_STATE_BACKOFF:
      return "backoff";
    default:
      return "unspecified";
  }
}

std::optional<v1::CellState> StateFromName(std::string_view name) {
  for (v1::CellState state : kCellStates) {
    if (name == StateName(state)) return state;
  }
  return std::nullopt;
}

bool Ended(v1::CellState state) {
  return state == v1::CELL_STATE_SUCCEEDED || state == v1::CELL_STATE_FAILED ||
         state == v1::CELL_STATE_DIVERGED || state == v1::CELL_STATE_CANCELLED;
}

CellRole RoleOf(const v1::Cell& cell) {
  return RoleFromName(cell.role()).value_or(CellRole::kCell);
}

}  // namespace onset::wire
