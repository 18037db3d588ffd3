// The store's access records: the coordinator's tokens (by name, with their roles; only the
// SHA-256 of each secret) and the audit log of the calls that change a study or who may call.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/access_role.h"

namespace onset::coordinator {

// A token the coordinator keeps. Its name is taken for good: a revoked token keeps its row, so
// that no later token is mistaken for it in the audit log.
struct TokenRecord {
  std::string name;  // common::CheckTokenName
  common::Role role = common::Role::kRead;
  std::string secret_sha256;  // lowercase hex; the secret itself is never kept
  int64_t created_unix_ms = 0;
  std::string created_by;       // the name of the token that created it
  int64_t revoked_unix_ms = 0;  // 0: it works
  std::string revoked_by;
};

// Tokens that work at once, and rows in all (revoked tokens keep theirs): a bound on what the
// coordinator holds in memory and on ListTokens's reply (about 1 MB).
inline constexpr int kMaxLiveTokens = 1000;
inline constexpr int kMaxTokenRows = 4000;

// One entry of the audit log.
struct AuditRecord {
  int64_t id = 0;          // set by the store: increasing
  int64_t at_unix_ms = 0;  // set by the store: its clock when the entry was written
  std::string token_name;
  common::Role role = common::Role::kRead;
  std::string peer;    // where the call came from ("ipv4:127.0.0.1:50412")
  std::string action;  // "submit", "cancel", "rerun", "record-export", "backup", "token-create",
                       // "token-revoke"
  std::string study;   // "" when the action is not about one study
  std::string detail;  // a short line, e.g. "4 cells cancelled"
};

// The audit log keeps the newest this many entries; writing one more forgets the oldest.
inline constexpr int64_t kMaxAuditEntries = 100'000;
// Each text field of an entry is cut (on a UTF-8 character boundary) to this many bytes, so that
// a page of the log has a bound.
inline constexpr size_t kMaxAuditFieldBytes = 512;
// The most entries one ReadAudit returns.
inline constexpr int kMaxAuditPage = 1000;

struct AuditQuery {
  std::string study;      // "": every entry
  int limit = 100;        // 1..kMaxAuditPage
  int64_t before_id = 0;  // entries older than this one (a page's next_before_id); 0: the newest
};

struct AuditPage {
  std::vector<AuditRecord> entries;  // the newest first
  int64_t next_before_id = 0;        // the next page's before_id; 0: this page is the last
};

class AccessStore {
 public:
  virtual ~AccessStore() = default;

  // Keeps `token` (its created_unix_ms from the store's clock; not revoked), returned as kept.
  // AlreadyExists when a token has or had its name; ResourceExhausted at kMaxLiveTokens live
  // tokens or kMaxTokenRows rows (the message says which and what to do).
  virtual absl::StatusOr<TokenRecord> AddToken(const TokenRecord& token) = 0;
  // Marks the token revoked by the token named `revoked_by`, now; returns it so. NotFound for an
  // unknown name; FailedPrecondition for one revoked already.
  virtual absl::StatusOr<TokenRecord> RevokeToken(const std::string& name,
                                                  const std::string& revoked_by) = 0;
  // Every token kept, revoked ones too, in the order they were created.
  virtual absl::StatusOr<std::vector<TokenRecord>> ListTokens() = 0;

  // Writes `entry` (its id and time set here, its fields cut to kMaxAuditFieldBytes) and forgets
  // the entries older than the newest kMaxAuditEntries.
  virtual absl::Status AppendAudit(const AuditRecord& entry) = 0;
  // A page of the log. InvalidArgument for a limit out of 1..kMaxAuditPage or a negative
  // before_id.
  virtual absl::StatusOr<AuditPage> ReadAudit(const AuditQuery& query) = 0;
};

}  // namespace onset::coordinator
