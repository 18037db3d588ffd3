#include "coordinator/dashboard/http_access.h"

namespace onset::coordinator {

std::optional<HttpRefusal> CheckHttpToken(const std::string& authorization,
                                          const common::TokenRegistry& tokens,
                                          const common::MethodAccess& what) {
  const std::optional<common::Caller> caller = common::BearerHeaderCaller(authorization, tokens);
  if (!caller) {
    return HttpRefusal{401,
                       "missing or wrong token: send 'Authorization: Bearer TOKEN' with a token of "
                       "the coordinator of role " +
                           std::string(common::RoleName(what.needs)) +
                           " or better (onset token create NAME --role read)"};
  }
  if (!common::RoleAllows(caller->role, what.needs)) {
    return HttpRefusal{403, "token '" + caller->token_name + "' has role " +
                                std::string(common::RoleName(caller->role)) + "; " +
                                std::string(what.method) + " needs " +
                                std::string(common::RoleName(what.needs))};
  }
  return std::nullopt;
}

}  // namespace onset::coordinator
