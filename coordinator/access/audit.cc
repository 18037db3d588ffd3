#include "coordinator/access/audit.h"

#include <spdlog/spdlog.h>

namespace onset::coordinator {

void Audit(AccessStore& store, const common::Caller& caller, const std::string& peer,
           const std::string& action, const std::string& study, const std::string& detail) {
  AuditRecord entry;
  entry.token_name = caller.token_name;
  entry.role = caller.role;
  entry.peer = peer;
  entry.action = action;
  entry.study = study;
  entry.detail = detail;
  if (absl::Status s = store.AppendAudit(entry); !s.ok()) {
    spdlog::error("audit: cannot record {} of study '{}' by token '{}' from {} ({}): {}", action,
                  study, caller.token_name, peer, detail, std::string(s.message()));
  }
}

}  // namespace onset::coordinator
