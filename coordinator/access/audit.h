// The audit log's entries, as the services write them: who (the token's name and role), from
// where (the peer), what (the action), on which study, and a short detail. Written for every call
// that changes a study or the coordinator's access: a submission (not a dry run), a cancel, a
// rerun, a recorded export, a backup, a token created or revoked.
//
// The entry is written after the action succeeded (a backup's when the copy starts). The action
// has happened then whether or not its entry can be written: a failure to write one is logged as
// an error (naming the entry) and does not fail the call.
#pragma once

#include <string>

#include "common/access_role.h"
#include "coordinator/store/access_store.h"

namespace onset::coordinator {

// Writes the entry of `caller`'s call from `peer` to `store`, or logs why it could not.
void Audit(AccessStore& store, const common::Caller& caller, const std::string& peer,
           const std::string& action, const std::string& study, const std::string& detail);

}  // namespace onset::coordinator
