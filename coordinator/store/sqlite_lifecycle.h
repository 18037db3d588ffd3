// The cell lifecycle (coordinator/cells/cell_lifecycle.h) on the coordinator's rows: loading a
// cell's lifecycle columns and its current attempt, applying an event and writing what the step
// says, all inside the caller's write transaction. Every change of a cell's state goes through
// Apply(); the SQL here only moves values between rows and the machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/cells/cell_lifecycle.h"
#include "coordinator/study/grid.h"
#include "db/sqlite.h"

namespace onset::coordinator::lifecycle {

// A cell row as the lifecycle sees it, with what the store needs to act on a step.
struct LoadedCell {
  int64_t row = 0;
  std::string hash;
  CellRole role = CellRole::kCell;
  int64_t tokens_done = 0;
  int64_t tokens_budget = 0;
  int64_t attempt_row = 0;  // the current attempt's row; 0 before the first
  life::CellLife life;
};

// NotFound for a row that does not exist.
absl::StatusOr<LoadedCell> LoadCell(db::Connection& db, int64_t cell_row);

// Applies `event` to `cell` at `context` and writes the step: the current attempt's end (with
// what `end`, a Report's, says of the trainer's exit) or its confirmation, the cell's lifecycle
// columns, a new lineage (the cell's points discarded, a trunk's branches waiting again), a
// succeeded cell's progress, a trunk's waiting branches ended with it. A Claim's attempt row
// must be inserted before (it names the attempt in the state change's event). Nothing is written
// unless the verdict is kApplied. `note` (a TrunkEnded's) becomes the cell's note.
absl::StatusOr<life::Step> Apply(db::Connection& db, const LoadedCell& cell,
                                 const life::Event& event, const life::Context& context,
                                 const std::string& note = "");

}  // namespace onset::coordinator::lifecycle
