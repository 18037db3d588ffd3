// SqliteStore: the coordinator's tokens and the audit log (access_store.h).
#include <string>

#include "common/status_macros.h"
#include "common/utf8.h"
#include "coordinator/store/sqlite_store.h"

namespace onset::coordinator {
namespace {

constexpr char kTokenColumns[] =
    "name, role, secret_sha256, created_at, created_by, revoked_at, revoked_by";

// The role a row names; a row that names none (the table's CHECK forbids it) reads as the
// weakest, read, and is logged by no one: it can only be a damaged database.
common::Role RoleOf(const std::string& name) {
  return common::ParseRole(name).value_or(common::Role::kRead);
}

// A row of kTokenColumns.
TokenRecord TokenRow(const db::Statement& stmt) {
  TokenRecord token;
  token.name = stmt.Text(0);
  token.role = RoleOf(stmt.Text(1));
  token.secret_sha256 = stmt.Text(2);
  token.created_unix_ms = stmt.Int(3);
  token.created_by = stmt.Text(4);
  token.revoked_unix_ms = stmt.IsNull(5) ? 0 : stmt.Int(5);
  token.revoked_by = stmt.IsNull(6) ? "" : stmt.Text(6);
  return token;
}

absl::StatusOr<TokenRecord> FindToken(db::Connection& db, const std::string& name) {
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt, db.Prepare(std::string("SELECT ") + kTokenColumns +
                                                        " FROM access_tokens WHERE name = ?"));
  stmt.BindAll(name);
  ONSET_ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) {
    return absl::NotFoundError("no token named '" + name + "' (onset token list shows them)");
  }
  return TokenRow(stmt);
}

std::string Cut(const std::string& text) {
  return std::string(common::TruncateUtf8(common::SanitizeUtf8(text), kMaxAuditFieldBytes));
}

}  // namespace

absl::StatusOr<TokenRecord> SqliteStore::AddToken(const TokenRecord& token) {
  return Write<TokenRecord>([&](db::Connection& db) -> absl::StatusOr<TokenRecord> {
    ONSET_ASSIGN_OR_RETURN(
        db::Statement count,
        db.Prepare("SELECT COUNT(*), COUNT(*) FILTER (WHERE revoked_at IS NULL), "
                   "COUNT(*) FILTER (WHERE name = ?) FROM access_tokens"));
    count.BindAll(token.name);
    ONSET_ASSIGN_OR_RETURN(bool row, count.Step());
    if (!row) return absl::InternalError("counting the tokens returned no row");
    if (count.Int(2) > 0) {
      return absl::AlreadyExistsError("a token named '" + token.name +
                                      "' exists or existed (names of revoked tokens are not taken "
                                      "again): choose another name");
    }
    if (count.Int(1) >= max_live_tokens_) {
      return absl::ResourceExhaustedError(
          "the coordinator holds " + std::to_string(max_live_tokens_) +
          " tokens that work, its most: revoke one (onset token revoke NAME) first");
    }
    if (count.Int(0) >= max_token_rows_) {
      return absl::ResourceExhaustedError(
          "the coordinator keeps " + std::to_string(max_token_rows_) +
          " tokens, revoked ones included (they keep their names), its most: no more can be made "
          "on this database");
    }
    TokenRecord kept = token;
    kept.created_unix_ms = clock_.WallUnixMs();
    kept.revoked_unix_ms = 0;
    kept.revoked_by.clear();
    ONSET_ASSIGN_OR_RETURN(
        db::Statement insert,
        db.Prepare("INSERT INTO access_tokens (name, role, secret_sha256, created_at, created_by) "
                   "VALUES (?, ?, ?, ?, ?)"));
    insert.BindAll(kept.name, common::RoleName(kept.role), kept.secret_sha256, kept.created_unix_ms,
                   kept.created_by);
    ONSET_RETURN_IF_ERROR(insert.Run());
    return kept;
  });
}

absl::StatusOr<TokenRecord> SqliteStore::RevokeToken(const std::string& name,
                                                     const std::string& revoked_by) {
  return Write<TokenRecord>([&](db::Connection& db) -> absl::StatusOr<TokenRecord> {
    ONSET_ASSIGN_OR_RETURN(TokenRecord token, FindToken(db, name));
    if (token.revoked_unix_ms != 0) {
      return absl::FailedPreconditionError("token '" + name + "' was revoked already (by '" +
                                           token.revoked_by + "')");
    }
    token.revoked_unix_ms = clock_.WallUnixMs();
    token.revoked_by = revoked_by;
    ONSET_ASSIGN_OR_RETURN(
        db::Statement update,
        db.Prepare("UPDATE access_tokens SET revoked_at = ?, revoked_by = ? WHERE name = ?"));
    update.BindAll(token.revoked_unix_ms, token.revoked_by, name);
    ONSET_RETURN_IF_ERROR(update.Run());
    return token;
  });
}

absl::StatusOr<std::vector<TokenRecord>> SqliteStore::ListTokens() {
  return Read<std::vector<TokenRecord>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<TokenRecord>> {
        ONSET_ASSIGN_OR_RETURN(
            db::Statement stmt,
            db.Prepare(std::string("SELECT ") + kTokenColumns + " FROM access_tokens ORDER BY id"));
        std::vector<TokenRecord> tokens;
        while (true) {
          ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
          if (!row) return tokens;
          tokens.push_back(TokenRow(stmt));
        }
      });
}

absl::Status SqliteStore::AppendAudit(const AuditRecord& entry) {
  return Write<bool>([&](db::Connection& db) -> absl::StatusOr<bool> {
           ONSET_ASSIGN_OR_RETURN(
               db::Statement insert,
               db.Prepare("INSERT INTO audit_log (at_unix_ms, token_name, role, peer, action, "
                          "study, detail) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id"));
           insert.BindAll(clock_.WallUnixMs(), Cut(entry.token_name), common::RoleName(entry.role),
                          Cut(entry.peer), Cut(entry.action), Cut(entry.study), Cut(entry.detail));
           ONSET_ASSIGN_OR_RETURN(bool row, insert.Step());
           if (!row) return absl::InternalError("writing an audit entry returned no id");
           const int64_t id = insert.Int(0);
           // Ids increase by one per entry, so the newest max_audit_entries_ are those above
           // id - max_audit_entries_: one range delete on the primary key, usually of one row.
           ONSET_ASSIGN_OR_RETURN(db::Statement forget,
                                  db.Prepare("DELETE FROM audit_log WHERE id <= ?"));
           forget.BindAll(id - max_audit_entries_);
           ONSET_RETURN_IF_ERROR(forget.Run());
           return true;
         })
      .status();
}

absl::StatusOr<AuditPage> SqliteStore::ReadAudit(const AuditQuery& query) {
  if (query.limit < 1 || query.limit > kMaxAuditPage) {
    return absl::InvalidArgumentError("limit: 1 to " + std::to_string(kMaxAuditPage));
  }
  if (query.before_id < 0) return absl::InvalidArgumentError("before_id: must not be negative");
  return Read<AuditPage>([&](db::Connection& db) -> absl::StatusOr<AuditPage> {
    // One more than the page, to tell whether another follows.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement stmt,
        db.Prepare("SELECT id, at_unix_ms, token_name, role, peer, action, study, detail "
                   "FROM audit_log WHERE (?1 = 0 OR id < ?1) AND (?2 = '' OR study = ?2) "
                   "ORDER BY id DESC LIMIT ?3"));
    stmt.BindAll(query.before_id, query.study, query.limit + 1);
    AuditPage page;
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      if (static_cast<int>(page.entries.size()) == query.limit) {
        page.next_before_id = page.entries.back().id;
        break;
      }
      AuditRecord entry;
      entry.id = stmt.Int(0);
      entry.at_unix_ms = stmt.Int(1);
      entry.token_name = stmt.Text(2);
      entry.role = RoleOf(stmt.Text(3));
      entry.peer = stmt.Text(4);
      entry.action = stmt.Text(5);
      entry.study = stmt.Text(6);
      entry.detail = stmt.Text(7);
      page.entries.push_back(std::move(entry));
    }
    return page;
  });
}

}  // namespace onset::coordinator
