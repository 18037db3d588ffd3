#include "cli/views/access_view.h"

#include <ctime>

#include "absl/strings/str_cat.h"
#include "cli/views/table.h"

namespace onset::cli {

std::string UtcTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string RenderTokens(const v1::ListTokensResponse& tokens) {
  Table table({"NAME", "ROLE", "CREATED", "CREATED BY", "REVOKED", "REVOKED BY"});
  for (const v1::TokenInfo& t : tokens.tokens()) {
    if (t.token_file()) {
      table.AddRow({t.name(), t.role(), "(the token file)", "-", "-", "-"});
      continue;
    }
    table.AddRow({t.name(), t.role(), UtcTime(t.created_unix_ms()),
                  t.created_by().empty() ? "-" : t.created_by(), UtcTime(t.revoked_unix_ms()),
                  t.revoked_by().empty() ? "-" : t.revoked_by()});
  }
  return table.Render();
}

std::string RenderAudit(const std::vector<v1::AuditEntry>& entries, bool more) {
  if (entries.empty()) return "no audit entries\n";
  Table table({"TIME", "TOKEN", "ROLE", "PEER", "ACTION", "STUDY", "DETAIL"});
  for (const v1::AuditEntry& e : entries) {
    table.AddRow({UtcTime(e.at_unix_ms()), e.token_name(), e.role(), e.peer(), e.action(),
                  e.study().empty() ? "-" : e.study(), Truncate(e.detail(), 200)});
  }
  std::string text = table.Render();
  if (more) absl::StrAppend(&text, "(older entries are not shown: --limit N shows more)\n");
  return text;
}

}  // namespace onset::cli
