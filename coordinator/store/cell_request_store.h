// What people ask of cells: cancel and rerun, carried out by the cell lifecycle.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {

// Which cells `onset rerun` queues again.
struct RerunRequest {
  std::string study;
  // Cells in one of these states (a running cell whose cancel is pending counts as cancelled);
  // none named: every cell that ended or waits out a backoff.
  std::vector<CellState> states;
  std::map<std::string, std::string> where;  // and whose display axes have these values
  std::vector<std::string> cell_ids;         // and, when given, only these cells
  bool fresh = false;  // a new lineage: discard points and checkpoints, start from scratch
};

// Cancel and rerun.
class CellRequestStore {
 public:
  virtual ~CellRequestStore() = default;

  // Cancels the given cells of `study` (all of them when `cell_ids` is empty) that have not
  // ended: queued and backoff cells at once; a running one stays running until its attempt has
  // ended (its worker hears of the cancel at its next call). Returns the number of cells
  // cancelled. NotFound for an unknown study or cell.
  virtual absl::StatusOr<int> CancelCells(const std::string& study,
                                          const std::vector<std::string>& cell_ids) = 0;
  // Queues again the cells the request selects (a running cell whose cancel is pending counts
  // as cancelled) and resets their failure count; a running one is queued once its attempt has
  // ended. Named cells cost a lookup each, a filter a pass over the study. Returns their number.
  // NotFound for an unknown study or cell.
  virtual absl::StatusOr<int> RerunCells(const RerunRequest& request) = 0;
};

}  // namespace onset::coordinator
