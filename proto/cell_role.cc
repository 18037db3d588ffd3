#include "proto/cell_role.h"

namespace onset::wire {

std::string_view RoleName(CellRole role) {
  switch (role) {
    case CellRole::kTrunk:
      return "trunk";
    case CellRole::kBranch:
      return "branch";
    case CellRole::kCell:
      break;
  }
  return "cell";
}

std::optional<CellRole> RoleFromName(std::string_view name) {
  for (CellRole role : {CellRole::kCell, CellRole::kTrunk, CellRole::kBranch}) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

}  // namespace onset::wire
