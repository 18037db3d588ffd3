// How a cell runs, and the names of its roles on the wire (onset.v1 Cell.role) and in the
// database: defined once, without protobuf, so that the study's own code can use them.
#pragma once

#include <optional>
#include <string_view>

namespace onset::wire {

// How a cell runs (docs/wsd-trunks.md): on its own, as a WSD trunk, or as a branch of one.
enum class CellRole { kCell, kTrunk, kBranch };
// "cell", "trunk", "branch".
std::string_view RoleName(CellRole role);
// The role of one of those names; nullopt for any other text.
std::optional<CellRole> RoleFromName(std::string_view name);

}  // namespace onset::wire
