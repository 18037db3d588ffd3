#include "common/grpc_auth.h"

#include <gmock/gmock.h>
#include <grpcpp/test/server_context_test_spouse.h>
#include <gtest/gtest.h>

#include <string>

#include "common/fake_clock.h"
#include "tests/db/log_capture.h"

namespace onset::common {
namespace {

using ::testing::HasSubstr;

int Lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

constexpr MethodAccess kBackup{"Backup", Role::kAdmin};
constexpr MethodAccess kGetStudy{"GetStudy", Role::kRead};
constexpr MethodAccess kLeaseJob{"LeaseJob", Role::kWorker};

// A call carrying `authorization` (none when empty), checked for `method`.
grpc::Status Call(const BearerTokenChecker& checker, const std::string& authorization,
                  const MethodAccess& method, Caller* caller = nullptr) {
  grpc::ServerContext context;
  grpc::testing::ServerContextTestSpouse spouse(&context);
  if (!authorization.empty()) spouse.AddClientMetadata("authorization", authorization);
  return checker.Check(context, method, caller);
}

TEST(BearerTokenCheckerTest, ATokenOfAWeakRoleIsDeniedNamingItsRoleAndWhatTheMethodNeeds) {
  auto tokens = TokenRegistry::WithFileToken("file-secret");
  tokens->AddSecret("prom-secret", {"prom", Role::kRead});
  tokens->AddSecret("ci-secret", {"ci", Role::kSubmit});
  BearerTokenChecker checker(tokens);

  grpc::Status denied = Call(checker, "Bearer prom-secret", kBackup);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(), "token 'prom' has role read; Backup needs admin");
  denied = Call(checker, "Bearer ci-secret", kLeaseJob);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(), "token 'ci' has role submit; LeaseJob needs worker");

  Caller caller;
  ASSERT_TRUE(Call(checker, "Bearer ci-secret", kGetStudy, &caller).ok());
  EXPECT_EQ(caller.token_name, "ci");
  EXPECT_EQ(caller.role, Role::kSubmit);
  ASSERT_TRUE(Call(checker, "bearer file-secret", kBackup, &caller).ok());
  EXPECT_EQ(caller.token_name, kFileTokenName);
  EXPECT_EQ(caller.role, Role::kAdmin);
}

TEST(BearerTokenCheckerTest, AMissingUnknownOrRevokedTokenIsUnauthenticatedAlike) {
  auto tokens = std::make_shared<TokenRegistry>();
  tokens->AddSecret("prom-secret", {"prom", Role::kRead});
  BearerTokenChecker checker(tokens);
  ASSERT_TRUE(Call(checker, "Bearer prom-secret", kGetStudy).ok());
  tokens->Remove("prom");  // revoked: the next call is refused
  for (const std::string& header :
       {std::string("Bearer prom-secret"), std::string(""), std::string("Bearer other"),
        std::string("Basic prom-secret"), std::string("Bearer ")}) {
    grpc::Status refused = Call(checker, header, kGetStudy);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED) << header;
    EXPECT_EQ(refused.error_message(), kUnauthenticatedMessage) << header;
  }
}

TEST(BearerTokenCheckerTest, RefusalsLogTheFirstAtOnceThenOneLineAMinuteWithTheCount) {
  FakeClock clock;
  BearerTokenChecker checker(std::string(32, 'a'), clock);
  db::testing::LogCapture log;
  // What a client without a token can send in a few seconds.
  for (int i = 0; i < 10'000; ++i)
    checker.LogRefusal("ipv4:127.0.0.1:" + std::to_string(i), "no token");
  EXPECT_EQ(Lines(log.text()), 1) << log.text();
  EXPECT_THAT(log.text(), HasSubstr("refused a call from ipv4:127.0.0.1:0: no token"));

  clock.Advance(BearerTokenChecker::kRefusalLogInterval);
  checker.LogRefusal("ipv4:127.0.0.1:9", "wrong token");
  EXPECT_EQ(Lines(log.text()), 2) << log.text();
  EXPECT_THAT(log.text(),
              HasSubstr("refused a call from ipv4:127.0.0.1:9: wrong token (9999 more refused "
                        "since the last such line)"));
}

}  // namespace
}  // namespace onset::common
