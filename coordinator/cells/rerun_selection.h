// Which cells `onset rerun` may pick and picks by default: cells that ended, wait out a backoff
// or, named as such, run (they are stopped and queued again once their attempt has ended), never
// queued ones; without named states, the ones that ended without a result (failed, diverged,
// cancelled, a running cell whose cancel is pending among them), so a plain rerun leaves
// succeeded and running cells alone.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {

// The states a plain rerun selects: failed, diverged, cancelled.
std::vector<CellState> DefaultRerunStates();

// The states a rerun selects from those the request named (nullopt: a value this coordinator
// does not know): DefaultRerunStates() when it named none. InvalidArgument for a queued or
// unknown state.
absl::StatusOr<std::vector<CellState>> RerunStates(
    const std::vector<std::optional<CellState>>& named);

}  // namespace onset::coordinator
