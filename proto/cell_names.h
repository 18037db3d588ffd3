// The names of what the wire (onset.v1) says about a cell, defined once for every program that
// prints, parses or stores them: its states, whether it has ended, and its role (the role's
// names, which need no protobuf, are in cell_role.h). The database stores the same names
// (docs/schema.md).
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "onset/v1/onset.pb.h"
#include "proto/cell_role.h"

namespace onset::wire {

// Every state a cell can be in, in the order `onset status` counts them.
inline constexpr std::array<v1::CellState, 7> kCellStates = {
    v1::CELL_STATE_SUCCEEDED, v1::CELL_STATE_FAILED,  v1::CELL_STATE_DIVERGED,
    v1::CELL_STATE_CANCELLED, v1::CELL_STATE_RUNNING, v1::CELL_STATE_BACKOFF,
    v1::CELL_STATE_QUEUED};

// "queued", "running", "succeeded", "failed", "diverged", "cancelled", "backoff";
// "unspecified" for any other value.
std::string_view StateName(v1::CellState state);
// The state of one of those names (not "unspecified"); nullopt for any other text.
std::optional<v1::CellState> StateFromName(std::string_view name);

// Whether a cell in `state` has ended: succeeded, failed, diverged or cancelled. A cell in
// backoff has not: it will run again.
bool Ended(v1::CellState state);

// The role a cell on the wire carries; kCell when it names none (a coordinator from before
// roles) or one this program does not know.
CellRole RoleOf(const v1::Cell& cell);

}  // namespace onset::wire
