// What `onset token list` and `onset audit` print: the coordinator's tokens (never a secret) and
// its audit log, laid out with cli/views/table.h. Pure functions of the API's messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onset/v1/onset.pb.h"

namespace onset::cli {

// "2024-05-01 14:03:07Z": a time in UTC, to the second; "-" for 0.
std::string UtcTime(int64_t unix_ms);

// One row per token: name, role, when and by whom it was created, and when and by whom it was
// revoked ("-" while it works); the token file's says so.
std::string RenderTokens(const v1::ListTokensResponse& tokens);

// One row per entry, as given (the newest first): time, token, role, peer, action, study
// ("-" for none) and detail; "no audit entries" for none. `more`: the log holds older entries
// than these (a line says how to see them).
std::string RenderAudit(const std::vector<v1::AuditEntry>& entries, bool more);

}  // namespace onset::cli
