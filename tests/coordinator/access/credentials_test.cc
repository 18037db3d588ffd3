// Credentials over a fake AccessStore (this binary links no SQLite): what a create and a revoke do
// to the registry calls are checked against, and what the store is given.
#include "coordinator/access/credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "base/sha256.h"

namespace onset::coordinator {
namespace {

using common::Role;
using ::testing::HasSubstr;

// Tokens in a map; the audit log is not used here.
class FakeAccessStore final : public AccessStore {
 public:
  absl::StatusOr<TokenRecord> AddToken(const TokenRecord& token) override {
    if (!tokens_.emplace(token.name, token).second) return absl::AlreadyExistsError("taken");
    order_.push_back(token.name);
    return token;
  }
  absl::StatusOr<TokenRecord> RevokeToken(const std::string& name,
                                          const std::string& revoked_by) override {
    auto it = tokens_.find(name);
    if (it == tokens_.end()) return absl::NotFoundError("no " + name);
    it->second.revoked_unix_ms = 1;
    it->second.revoked_by = revoked_by;
    return it->second;
  }
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() override {
    std::vector<TokenRecord> all;
    for (const std::string& name : order_) all.push_back(tokens_.at(name));
    return all;
  }
  absl::Status AppendAudit(const AuditRecord&) override { return absl::OkStatus(); }
  absl::StatusOr<AuditPage> ReadAudit(const AuditQuery&) override { return AuditPage(); }

  std::map<std::string, TokenRecord> tokens_;
  std::vector<std::string> order_;
};

const common::Caller kAdmin{common::kFileTokenName, Role::kAdmin};

TEST(CredentialsTest, ACreatedTokenIsAcceptedAtOnceAndOnlyItsDigestIsKept) {
  FakeAccessStore store;
  auto registry = common::TokenRegistry::WithFileToken("file-secret");
  Credentials credentials(&store, registry);
  absl::StatusOr<Credentials::Created> created = credentials.Create("prom", "read", kAdmin);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->secret.size(), 64u);
  EXPECT_EQ(created->secret.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(created->token.role, Role::kRead);
  EXPECT_EQ(created->token.created_by, common::kFileTokenName);
  const TokenRecord& kept = store.tokens_.at("prom");
  EXPECT_EQ(kept.secret_sha256, base::Sha256Hex(created->secret));
  EXPECT_NE(kept.secret_sha256, created->secret);
  std::optional<common::Caller> caller = registry->Find(created->secret);
  ASSERT_TRUE(caller.has_value());
  EXPECT_EQ(caller->token_name, "prom");
  EXPECT_EQ(caller->role, Role::kRead);

  // Two tokens never share a secret.
  absl::StatusOr<Credentials::Created> other = credentials.Create("prom2", "read", kAdmin);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->secret, created->secret);
}

TEST(CredentialsTest, ARevokedTokenIsRefusedAtOnceAndTheFileTokenIsNotRevokedHere) {
  FakeAccessStore store;
  auto registry = common::TokenRegistry::WithFileToken("file-secret");
  Credentials credentials(&store, registry);
  absl::StatusOr<Credentials::Created> created = credentials.Create("ci", "submit", kAdmin);
  ASSERT_TRUE(created.ok());
  absl::StatusOr<TokenRecord> revoked = credentials.Revoke("ci", {"ops", Role::kAdmin});
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->revoked_by, "ops");
  EXPECT_FALSE(registry->Find(created->secret).has_value());

  absl::StatusOr<TokenRecord> file = credentials.Revoke(common::kFileTokenName, kAdmin);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(file.status().message(), HasSubstr("restart onsetd"));
  EXPECT_TRUE(registry->Find("file-secret").has_value());
  EXPECT_EQ(credentials.Revoke("nobody", kAdmin).status().code(), absl::StatusCode::kNotFound);
}

TEST(CredentialsTest, BadNamesAndRolesAreRefusedBeforeTheStore) {
  FakeAccessStore store;
  Credentials credentials(&store, std::make_shared<common::TokenRegistry>());
  EXPECT_EQ(credentials.Create("Bad Name", "read", kAdmin).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(credentials.Create(common::kFileTokenName, "admin", kAdmin).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Credentials::Created> role = credentials.Create("x", "root", kAdmin);
  EXPECT_EQ(role.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(role.status().message(), HasSubstr("read, worker, submit or admin"));
  EXPECT_TRUE(store.tokens_.empty());
}

TEST(CredentialsTest, LoadAcceptsTheStoresWorkingTokensOnly) {
  FakeAccessStore store;
  TokenRecord live;
  live.name = "live";
  live.role = Role::kWorker;
  live.secret_sha256 = base::Sha256Hex("live-secret");
  TokenRecord gone = live;
  gone.name = "gone";
  gone.role = Role::kAdmin;
  gone.secret_sha256 = base::Sha256Hex("gone-secret");
  gone.revoked_unix_ms = 2;
  ASSERT_TRUE(store.AddToken(live).ok());
  ASSERT_TRUE(store.AddToken(gone).ok());
  auto registry = std::make_shared<common::TokenRegistry>();
  Credentials credentials(&store, registry);
  ASSERT_TRUE(credentials.Load().ok());
  ASSERT_TRUE(registry->Find("live-secret").has_value());
  EXPECT_EQ(registry->Find("live-secret")->role, Role::kWorker);
  EXPECT_FALSE(registry->Find("gone-secret").has_value());
}

}  // namespace
}  // namespace onset::coordinator
