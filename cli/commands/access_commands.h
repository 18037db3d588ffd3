// Credentials by role and the audit log (docs/operating-onsetd.md, "Credentials and roles"), all
// through the coordinator's AccessService, which needs an admin token (the coordinator's token
// file, or a token of role admin):
//
//   onset token create NAME --role ROLE [--out FILE]   a new token; its secret is printed once on
//                                                      stdout, or written to FILE (mode 0600)
//   onset token list [--json]                          names, roles, who created and revoked them
//   onset token revoke NAME                            the token stops working at once
//   onset audit [--study S] [--limit N] [--json]       who changed what, the newest first
//
// Exit codes as every command: 0 done; 1 refused or failed (the coordinator's message says why);
// 2 bad input.
#pragma once

#include <ostream>
#include <string>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"

namespace onset::cli {

// `out_file` empty: the secret goes to `out`, alone on its line (what to pipe), and a note to
// `err`. Otherwise it is written to `out_file` with mode 0600 (a new file: an existing one is
// refused before anything is created), and `out` says where.
int TokenCreateCommand(StudyClient& client, const std::string& name, const std::string& role,
                       const std::string& out_file, std::ostream& out, std::ostream& err);
int TokenListCommand(StudyClient& client, bool json, std::ostream& out, std::ostream& err);
int TokenRevokeCommand(StudyClient& client, const std::string& name, std::ostream& out,
                       std::ostream& err);

// The newest `limit` entries (of `study` when not empty), read a page at a time.
inline constexpr int kMaxAuditLimit = 100'000;
int AuditCommand(StudyClient& client, const std::string& study, int limit, bool json,
                 std::ostream& out, std::ostream& err);

// Adds token (create, list, revoke) and audit to `app`.
void AddAccessCommands(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
