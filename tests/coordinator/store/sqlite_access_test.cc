// The store's tokens and audit log on SQLite: names taken for good, the bounds, only digests kept,
// the log bounded and read in pages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/sha256.h"
#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "db/sqlite.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using common::Role;
using ::testing::HasSubstr;

TokenRecord Token(const std::string& name, Role role, const std::string& secret) {
  TokenRecord token;
  token.name = name;
  token.role = role;
  token.secret_sha256 = base::Sha256Hex(secret);
  token.created_by = "onsetd.token";
  return token;
}

class SqliteAccessTest : public ::testing::Test {
 protected:
  void Open(SqliteStore::Options options = SqliteStore::Options()) {
    store_.reset();
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir_.File("onset.db"), clock_, RetryPolicy(), options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }
  void SetUp() override { Open(); }

  void Audit(const std::string& study, const std::string& detail) {
    AuditRecord entry;
    entry.token_name = "alice";
    entry.role = Role::kSubmit;
    entry.peer = "ipv4:127.0.0.1:5000";
    entry.action = "cancel";
    entry.study = study;
    entry.detail = detail;
    ASSERT_TRUE(store_->AppendAudit(entry).ok());
  }

  testutil::TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteAccessTest, TokensAreKeptByNameWithTheirRoleAndOnlyADigest) {
  absl::StatusOr<TokenRecord> kept = store_->AddToken(Token("prom", Role::kRead, "s3cret-prom"));
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->created_unix_ms, clock_.WallUnixMs());
  EXPECT_EQ(kept->revoked_unix_ms, 0);
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(store_->AddToken(Token("ci", Role::kSubmit, "s3cret-ci")).ok());

  absl::StatusOr<std::vector<TokenRecord>> tokens = store_->ListTokens();
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].name, "prom");
  EXPECT_EQ((*tokens)[0].role, Role::kRead);
  EXPECT_EQ((*tokens)[0].secret_sha256, base::Sha256Hex("s3cret-prom"));
  EXPECT_EQ((*tokens)[0].created_by, "onsetd.token");
  EXPECT_EQ((*tokens)[1].name, "ci");
  EXPECT_EQ((*tokens)[1].role, Role::kSubmit);

  // Nowhere in the database is a secret: every column of every row is compared.
  store_.reset();
  absl::StatusOr<std::unique_ptr<db::Connection>> db = db::Connection::Open(dir_.File("onset.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<db::Statement> rows = (*db)->Prepare(
      "SELECT name, role, secret_sha256, created_by, COALESCE(revoked_by, '') FROM access_tokens");
  ASSERT_TRUE(rows.ok()) << rows.status();
  int seen = 0;
  while (*rows->Step()) {
    ++seen;
    for (int c = 0; c < 5; ++c) EXPECT_THAT(rows->Text(c), ::testing::Not(HasSubstr("s3cret")));
  }
  EXPECT_EQ(seen, 2);
}

TEST_F(SqliteAccessTest, ANameIsTakenForGoodEvenAfterItsTokenIsRevoked) {
  ASSERT_TRUE(store_->AddToken(Token("prom", Role::kRead, "a")).ok());
  absl::StatusOr<TokenRecord> again = store_->AddToken(Token("prom", Role::kAdmin, "b"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("'prom' exists or existed"));

  clock_.Advance(std::chrono::seconds(5));
  absl::StatusOr<TokenRecord> revoked = store_->RevokeToken("prom", "alice");
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->revoked_unix_ms, clock_.WallUnixMs());
  EXPECT_EQ(revoked->revoked_by, "alice");
  EXPECT_EQ(store_->RevokeToken("prom", "alice").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->RevokeToken("nobody", "alice").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->AddToken(Token("prom", Role::kRead, "c")).status().code(),
            absl::StatusCode::kAlreadyExists);

  absl::StatusOr<std::vector<TokenRecord>> tokens = store_->ListTokens();
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 1u);
  EXPECT_EQ(tokens->front().revoked_by, "alice");
  EXPECT_GT(tokens->front().revoked_unix_ms, 0);
}

TEST_F(SqliteAccessTest, LiveTokensAndAllRowsAreBounded) {
  SqliteStore::Options options;
  options.max_live_tokens = 3;
  options.max_token_rows = 4;
  Open(options);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        store_->AddToken(Token("t" + std::to_string(i), Role::kRead, "s" + std::to_string(i)))
            .ok());
  }
  absl::StatusOr<TokenRecord> fourth = store_->AddToken(Token("t3", Role::kRead, "s3"));
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(fourth.status().message(), HasSubstr("revoke one"));
  // Revoking one makes room for a live token, up to the rows' bound.
  ASSERT_TRUE(store_->RevokeToken("t0", "alice").ok());
  ASSERT_TRUE(store_->AddToken(Token("t3", Role::kRead, "s3")).ok());
  ASSERT_TRUE(store_->RevokeToken("t1", "alice").ok());
  absl::StatusOr<TokenRecord> fifth = store_->AddToken(Token("t4", Role::kRead, "s4"));
  EXPECT_EQ(fifth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(fifth.status().message(), HasSubstr("revoked ones included"));
}

TEST_F(SqliteAccessTest, TheAuditLogKeepsTheNewestAndReadsInPagesNewestFirst) {
  SqliteStore::Options options;
  options.max_audit_entries = 10;
  Open(options);
  for (int i = 0; i < 25; ++i) {
    Audit(i % 2 == 0 ? "even" : "odd", "entry " + std::to_string(i));
    clock_.Advance(std::chrono::milliseconds(1));
  }
  // The newest 10 (15..24) in pages of 4, the newest first.
  std::vector<std::string> details;
  AuditQuery query;
  query.limit = 4;
  int pages = 0;
  while (true) {
    absl::StatusOr<AuditPage> page = store_->ReadAudit(query);
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    for (const AuditRecord& e : page->entries) details.push_back(e.detail);
    if (page->next_before_id == 0) break;
    query.before_id = page->next_before_id;
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(details.size(), 10u);
  EXPECT_EQ(details.front(), "entry 24");
  EXPECT_EQ(details.back(), "entry 15");

  // One study's entries.
  AuditQuery odd;
  odd.study = "odd";
  odd.limit = 100;
  absl::StatusOr<AuditPage> page = store_->ReadAudit(odd);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->entries.size(), 5u);
  EXPECT_EQ(page->entries.front().detail, "entry 23");
  EXPECT_EQ(page->entries.front().token_name, "alice");
  EXPECT_EQ(page->entries.front().role, Role::kSubmit);
  EXPECT_EQ(page->entries.front().action, "cancel");
  EXPECT_EQ(page->entries.front().peer, "ipv4:127.0.0.1:5000");
  EXPECT_GT(page->entries.front().at_unix_ms, page->entries.back().at_unix_ms);
  EXPECT_EQ(page->next_before_id, 0);

  AuditQuery bad;
  bad.limit = kMaxAuditPage + 1;
  EXPECT_EQ(store_->ReadAudit(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.limit = 0;
  EXPECT_EQ(store_->ReadAudit(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SqliteAccessTest, AuditFieldsAreCutToTheirBound) {
  Audit("s", std::string(10 * kMaxAuditFieldBytes, 'x'));
  AuditQuery query;
  absl::StatusOr<AuditPage> page = store_->ReadAudit(query);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 1u);
  EXPECT_EQ(page->entries[0].detail.size(), kMaxAuditFieldBytes);
}

}  // namespace
}  // namespace onset::coordinator
