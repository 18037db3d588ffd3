// Which cells `onset rerun` may pick and picks by default: cells that ended or wait out a
// backoff, never running or queued ones; without named states, the ones that ended without a
// result (failed, diverged, cancelled), so a plain rerun leaves succeeded cells alone.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {

// The states a plain rerun selects: failed, diverged, cancelled.
std::vector<CellState> DefaultRerunStates();

// The states a rerun selects from those the request named (nullopt: a value this coordinator
// does not know): DefaultRerunStates() when it named none. InvalidArgument for a running, queued
// or unknown state.
absl::StatusOr<std::vector<CellState>> RerunStates(
    const std::vector<std::optional<CellState>>& named);

}  // namespace onset::coordinator
