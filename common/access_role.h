// Roles: what a credential may do on the coordinator. Every token (common/token_registry.h) has
// one, every method of the API needs one (coordinator/rpc/method_roles.h lists them), and a call
// is served when its token's role allows the method's:
//
//   read    reads studies, cells, results, logs and metrics; the dashboard and /metrics
//   worker  the WorkerService: what onset-worker does (register, lease, report, finish)
//   submit  read, and changes studies: submit (and dry runs), cancel, rerun, record exports
//   admin   everything: backups, the list of workers, tokens, the audit log, and worker and
//           submit calls (the coordinator's own token file is an admin token)
//
// read < submit < admin; worker < admin; worker and read/submit are apart, so that a worker's
// credential reads no study and a person's leases no cell. No gRPC.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace onset::common {

enum class Role { kRead, kWorker, kSubmit, kAdmin };

// "read", "worker", "submit", "admin".
std::string_view RoleName(Role role);

// The role named `name` exactly as RoleName spells it; none for another word.
std::optional<Role> ParseRole(std::string_view name);

// The role names for a message, "read, worker, submit or admin".
inline constexpr char kRoleNames[] = "read, worker, submit or admin";

// Whether a credential of role `held` may call a method that needs `needed` (the order above).
bool RoleAllows(Role held, Role needed);

// What a method of the API needs: its name as the API spells it ("Backup") and the role.
struct MethodAccess {
  std::string_view method;
  Role needs;
};

// Who made a call: the name of the token it carried and the token's role.
struct Caller {
  std::string token_name;
  Role role = Role::kRead;
};

}  // namespace onset::common
