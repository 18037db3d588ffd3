#include "common/access_role.h"

namespace onset::common {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kWorker:
      return "worker";
    case Role::kSubmit:
      return "submit";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (Role role : {Role::kRead, Role::kWorker, Role::kSubmit, Role::kAdmin}) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

bool RoleAllows(Role held, Role needed) {
  if (held == needed || held == Role::kAdmin) return true;
  return held == Role::kSubmit && needed == Role::kRead;
}

}  // namespace onset::common
