// Which HTTP requests the coordinator's pages serve: those whose "Authorization: Bearer TOKEN"
// names a token the coordinator accepts (common/token_registry.h) with a role that allows what
// they ask (common/access_role.h). The dashboard's API and the Prometheus page (both GET only,
// neither changes anything) need role read, which submit and admin include.
#pragma once

#include <optional>
#include <string>

#include "common/access_role.h"
#include "common/token_registry.h"

namespace onset::coordinator {

// Why a request is refused: the HTTP status and a message for its body.
struct HttpRefusal {
  int status = 401;
  std::string message;
};

// None when the header's token may do `what` (e.g. {"the dashboard's API", Role::kRead}). Else
// 401 with the same message for a missing and an unknown token (a caller learns nothing about
// tokens), or 403 "token 'NAME' has role ROLE; WHAT needs ROLE" for a token whose role is too
// weak.
std::optional<HttpRefusal> CheckHttpToken(const std::string& authorization,
                                          const common::TokenRegistry& tokens,
                                          const common::MethodAccess& what);

}  // namespace onset::coordinator
