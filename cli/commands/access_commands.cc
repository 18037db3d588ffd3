#include "cli/commands/access_commands.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/durable_file.h"
#include "cli/exit_codes.h"
#include "cli/views/access_view.h"
#include "common/access_role.h"

namespace onset::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kNeedsCoordinator[] =
    "reads or changes the coordinator's tokens and audit log, which only a running coordinator "
    "serves (with an admin token)";

// Why `path` cannot take a new secret file; empty when it can.
std::string OutFileProblem(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    return "--out: " + path + " exists: name a new file (a secret is never written over another)";
  }
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec)) {
    return "--out: " + dir.string() + " is not a directory";
  }
  return "";
}

}  // namespace

int TokenCreateCommand(StudyClient& client, const std::string& name, const std::string& role,
                       const std::string& out_file, std::ostream& out, std::ostream& err) {
  if (!common::ParseRole(role)) {
    err << "--role: '" << role << "' is not a role: " << common::kRoleNames << "\n";
    return kExitBadInput;
  }
  if (!out_file.empty()) {
    if (const std::string problem = OutFileProblem(out_file); !problem.empty()) {
      err << problem << "\n";
      return kExitBadInput;
    }
  }
  absl::StatusOr<v1::CreateTokenResponse> created = client.CreateToken(name, role);
  if (!created.ok()) return ReportError(created.status(), err);
  const std::string what =
      "token '" + created->token().name() + "' (role " + created->token().role() + ")";
  if (out_file.empty()) {
    out << created->secret() << "\n";
    err << what << " created; its secret, above, is shown only now\n";
    return kExitOk;
  }
  // kKeep: a file that appeared since the check above stays as it was, and the secret is not
  // written; the read-back tells.
  std::optional<std::string> error =
      base::TryWriteFileDurably(out_file, created->secret() + "\n", {0600, base::IfExists::kKeep});
  std::string written;
  if (!error) error = base::ReadFile(out_file, &written);
  if (error || written != created->secret() + "\n") {
    err << what << " was created, but its secret could not be written to " << out_file << ": "
        << (error ? *error : "another file took its place") << "; revoke it (onset token revoke "
        << created->token().name() << ") and create another\n";
    return kExitFailure;
  }
  out << what << " created; its secret is in " << out_file << " (mode 0600)\n";
  return kExitOk;
}

int TokenListCommand(StudyClient& client, bool json, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::ListTokensResponse> tokens = client.ListTokens();
  if (!tokens.ok()) return ReportError(tokens.status(), err);
  out << (json ? ToJson(*tokens) : RenderTokens(*tokens));
  return kExitOk;
}

int TokenRevokeCommand(StudyClient& client, const std::string& name, std::ostream& out,
                       std::ostream& err) {
  absl::StatusOr<v1::RevokeTokenResponse> revoked = client.RevokeToken(name);
  if (!revoked.ok()) return ReportError(revoked.status(), err);
  out << "token '" << revoked->token().name() << "' (role " << revoked->token().role()
      << ") revoked: the coordinator refuses it from now on\n";
  return kExitOk;
}

int AuditCommand(StudyClient& client, const std::string& study, int limit, bool json,
                 std::ostream& out, std::ostream& err) {
  if (limit < 1 || limit > kMaxAuditLimit) {
    err << "--limit: 1 to " << kMaxAuditLimit << "\n";
    return kExitBadInput;
  }
  v1::ReadAuditResponse all;
  v1::ReadAuditRequest request;
  request.set_study(study);
  while (true) {
    request.set_page_size(std::min(1000, limit - all.entries_size()));
    absl::StatusOr<v1::ReadAuditResponse> page = client.ReadAudit(request);
    if (!page.ok()) return ReportError(page.status(), err);
    for (v1::AuditEntry& entry : *page->mutable_entries()) *all.add_entries() = std::move(entry);
    all.set_next_page_token(page->next_page_token());  // older entries follow from here
    if (page->next_page_token().empty() || all.entries_size() >= limit) break;
    request.set_page_token(page->next_page_token());
  }
  if (json) {
    out << ToJson(all);
    return kExitOk;
  }
  out << RenderAudit({all.entries().begin(), all.entries().end()}, !all.next_page_token().empty());
  return kExitOk;
}

void AddAccessCommands(CLI::App& app, CommandTable& table) {
  CLI::App* token = app.add_subcommand(
      "token", "credentials by role (read, worker, submit, admin): create, list, revoke");
  token->require_subcommand(1);

  struct CreateFlags {
    std::string name;
    std::string role;
    std::string out;
  };
  auto create = std::make_shared<CreateFlags>();
  CLI::App* create_app = token->add_subcommand(
      "create", "a new token of a role; its secret is printed once (or written to --out)");
  create_app->add_option("NAME", create->name, "its name: [a-z0-9][a-z0-9._-]{0,63}")->required();
  create_app->add_option("--role", create->role, "read, worker, submit or admin")->required();
  create_app->add_option("--out", create->out,
                         "write the secret to this new file (mode 0600) instead of stdout");
  table.push_back({create_app, Needs::kCoordinator, "token create", kNeedsCoordinator,
                   [create](const CommandContext& c) {
                     return TokenCreateCommand(*c.client, create->name, create->role, create->out,
                                               *c.out, *c.err);
                   }});

  auto list_json = std::make_shared<bool>(false);
  CLI::App* list_app =
      token->add_subcommand("list", "every token: name, role, created, revoked (never secrets)");
  list_app->add_flag("--json", *list_json, "print JSON");
  table.push_back({list_app, Needs::kCoordinator, "token list", kNeedsCoordinator,
                   [list_json](const CommandContext& c) {
                     return TokenListCommand(*c.client, *list_json, *c.out, *c.err);
                   }});

  auto revoke_name = std::make_shared<std::string>();
  CLI::App* revoke_app =
      token->add_subcommand("revoke", "a token stops working at once (its name stays taken)");
  revoke_app->add_option("NAME", *revoke_name, "the token's name")->required();
  table.push_back({revoke_app, Needs::kCoordinator, "token revoke", kNeedsCoordinator,
                   [revoke_name](const CommandContext& c) {
                     return TokenRevokeCommand(*c.client, *revoke_name, *c.out, *c.err);
                   }});

  struct AuditFlags {
    std::string study;
    int limit = 50;
    bool json = false;
  };
  auto audit = std::make_shared<AuditFlags>();
  CLI::App* audit_app = app.add_subcommand(
      "audit", "who changed studies and tokens, when, from where: the newest first");
  audit_app->add_option("--study", audit->study, "only the entries of this study");
  audit_app->add_option("--limit", audit->limit, "at most this many entries")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxAuditLimit));
  audit_app->add_flag("--json", audit->json, "print JSON");
  table.push_back({audit_app, Needs::kCoordinator, "audit", kNeedsCoordinator,
                   [audit](const CommandContext& c) {
                     return AuditCommand(*c.client, audit->study, audit->limit, audit->json, *c.out,
                                         *c.err);
                   }});
}

}  // namespace onset::cli
