// The AccessService through a real CoordinatorServer on port 0: tokens created work for the next
// call, revoked ones fail it, both across a restart; secrets are never listed; and the calls
// that change studies or tokens are in the audit log under the name of the token that made them.
#include "coordinator/rpc/access_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/grpc_auth.h"
#include "coordinator/server/coordinator_server.h"
#include "onset/v1/onset.grpc.pb.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace v1 = ::onset::v1;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef-test-token";

class AccessServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  void Start() {
    if (server_) server_->Shutdown();
    server_.reset();
    ServerConfig config;
    config.db_path = dir_.File("onset.db");
    config.listen = "127.0.0.1:0";
    config.token = kToken;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }
  std::unique_ptr<v1::AccessService::Stub> Access(const std::string& token = kToken) {
    return v1::AccessService::NewStub(
        common::NewClientChannel(server_->address(), common::ClientSecurity{token, ""}));
  }
  std::unique_ptr<v1::StudyService::Stub> Studies(const std::string& token) {
    return v1::StudyService::NewStub(
        common::NewClientChannel(server_->address(), common::ClientSecurity{token, ""}));
  }

  // A new token's secret; a failure fails the test.
  std::string Create(const std::string& name, const std::string& role,
                     const std::string& as = kToken) {
    v1::CreateTokenRequest request;
    request.set_name(name);
    request.set_role(role);
    v1::CreateTokenResponse response;
    grpc::Status status = Access(as)->CreateToken(Ctx().get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.token().name(), name);
    EXPECT_EQ(response.token().role(), role);
    return response.secret();
  }
  grpc::Status CreateStatus(const std::string& name, const std::string& role) {
    v1::CreateTokenRequest request;
    request.set_name(name);
    request.set_role(role);
    v1::CreateTokenResponse response;
    return Access()->CreateToken(Ctx().get(), request, &response);
  }
  grpc::Status Revoke(const std::string& name, const std::string& as = kToken) {
    v1::RevokeTokenRequest request;
    request.set_name(name);
    v1::RevokeTokenResponse response;
    return Access(as)->RevokeToken(Ctx().get(), request, &response);
  }
  grpc::Status List(const std::string& token) {
    v1::ListStudiesResponse response;
    return Studies(token)->ListStudies(Ctx().get(), {}, &response);
  }
  grpc::Status Submit(const std::string& token, bool dry_run) {
    v1::SubmitStudyRequest request;
    request.set_source_name("small.yaml");
    request.set_yaml(testing::kSmallStudy);
    request.set_dry_run(dry_run);
    auto ctx = Ctx();
    auto reader = Studies(token)->SubmitStudy(ctx.get(), request);
    v1::SubmitStudyResponse piece;
    while (reader->Read(&piece)) {
    }
    return reader->Finish();
  }
  std::vector<v1::AuditEntry> Audit(const std::string& study = "", int page_size = 0) {
    std::vector<v1::AuditEntry> entries;
    v1::ReadAuditRequest request;
    request.set_study(study);
    request.set_page_size(page_size);
    while (true) {
      v1::ReadAuditResponse response;
      grpc::Status status = Access()->ReadAudit(Ctx().get(), request, &response);
      EXPECT_TRUE(status.ok()) << status.error_message();
      for (const v1::AuditEntry& e : response.entries()) entries.push_back(e);
      if (!status.ok() || response.next_page_token().empty()) return entries;
      request.set_page_token(response.next_page_token());
    }
  }

  testutil::TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
};

TEST_F(AccessServiceTest, ATokenWorksFromItsCreationUntilItsRevocationAcrossRestarts) {
  const std::string secret = Create("prom", "read");
  EXPECT_EQ(secret.size(), 64u);
  EXPECT_TRUE(List(secret).ok());
  Start();  // loaded from the database
  EXPECT_TRUE(List(secret).ok());

  ASSERT_TRUE(Revoke("prom").ok());
  grpc::Status refused = List(secret);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(refused.error_message(), common::kUnauthenticatedMessage);
  Start();
  EXPECT_EQ(List(secret).error_code(), grpc::StatusCode::UNAUTHENTICATED);

  grpc::Status again = Revoke("prom");
  EXPECT_EQ(again.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(again.error_message(), HasSubstr("revoked already"));
  EXPECT_EQ(Revoke("nobody").error_code(), grpc::StatusCode::NOT_FOUND);
  grpc::Status file = Revoke(common::kFileTokenName);
  EXPECT_EQ(file.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(file.error_message(), HasSubstr("restart onsetd"));
  EXPECT_TRUE(List(kToken).ok());  // the token file's still works
}

TEST_F(AccessServiceTest, NamesAndRolesAreCheckedAndANameIsNeverTakenTwice) {
  Create("prom", "read");
  grpc::Status taken = CreateStatus("prom", "read");
  EXPECT_EQ(taken.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  ASSERT_TRUE(Revoke("prom").ok());
  EXPECT_EQ(CreateStatus("prom", "read").error_code(), grpc::StatusCode::ALREADY_EXISTS);
  grpc::Status bad_name = CreateStatus("Prom!", "read");
  EXPECT_EQ(bad_name.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(CreateStatus(common::kFileTokenName, "admin").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status bad_role = CreateStatus("root", "superuser");
  EXPECT_EQ(bad_role.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad_role.error_message(), HasSubstr("read, worker, submit or admin"));
}

TEST_F(AccessServiceTest, TheListNamesEveryTokenAndNoSecret) {
  const std::string prom = Create("prom", "read");
  const std::string ops = Create("ops", "admin");
  const std::string ci = Create("ci", "submit", /*as=*/ops);  // an admin token creates tokens
  ASSERT_TRUE(Revoke("prom", /*as=*/ops).ok());
  v1::ListTokensResponse list;
  ASSERT_TRUE(Access()->ListTokens(Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.tokens_size(), 4);
  EXPECT_EQ(list.tokens(0).name(), common::kFileTokenName);
  EXPECT_TRUE(list.tokens(0).token_file());
  EXPECT_EQ(list.tokens(0).role(), "admin");
  EXPECT_EQ(list.tokens(1).name(), "prom");
  EXPECT_GT(list.tokens(1).revoked_unix_ms(), 0);
  EXPECT_EQ(list.tokens(1).revoked_by(), "ops");
  EXPECT_EQ(list.tokens(2).name(), "ops");
  EXPECT_EQ(list.tokens(2).created_by(), common::kFileTokenName);
  EXPECT_EQ(list.tokens(3).name(), "ci");
  EXPECT_EQ(list.tokens(3).created_by(), "ops");
  EXPECT_EQ(list.tokens(3).revoked_unix_ms(), 0);
  const std::string wire = list.SerializeAsString();
  for (const std::string& secret : {prom, ops, ci, std::string(kToken)}) {
    EXPECT_THAT(wire, Not(HasSubstr(secret)));
  }
}

TEST_F(AccessServiceTest, ChangesAreAuditedUnderTheTokenThatMadeThemNewestFirst) {
  const std::string ci = Create("ci", "submit");
  ASSERT_TRUE(Submit(ci, /*dry_run=*/true).ok());  // a dry run changes nothing: not audited
  ASSERT_TRUE(Submit(ci, /*dry_run=*/false).ok());
  v1::CancelCellsRequest cancel;
  cancel.set_study("small");
  v1::CancelCellsResponse cancelled;
  ASSERT_TRUE(Studies(ci)->CancelCells(Ctx().get(), cancel, &cancelled).ok());
  v1::RerunCellsRequest rerun;
  rerun.set_study("small");
  v1::RerunCellsResponse queued;
  ASSERT_TRUE(Studies(ci)->RerunCells(Ctx().get(), rerun, &queued).ok());
  // A refused call changes nothing and is not audited.
  const std::string prom = Create("prom", "read");
  EXPECT_EQ(Studies(prom)->CancelCells(Ctx().get(), cancel, &cancelled).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(Revoke("prom").ok());

  const std::vector<v1::AuditEntry> entries = Audit("", /*page_size=*/2);
  std::vector<std::string> actions;
  for (const v1::AuditEntry& e : entries) actions.push_back(e.action() + " by " + e.token_name());
  EXPECT_THAT(actions,
              ::testing::ElementsAre("token-revoke by onsetd.token", "token-create by onsetd.token",
                                     "rerun by ci", "cancel by ci", "submit by ci",
                                     "token-create by onsetd.token"));
  const v1::AuditEntry& cancel_entry = entries[3];
  EXPECT_EQ(cancel_entry.study(), "small");
  EXPECT_EQ(cancel_entry.role(), "submit");
  EXPECT_THAT(cancel_entry.peer(), HasSubstr("127.0.0.1"));
  EXPECT_EQ(cancel_entry.detail(),
            std::to_string(cancelled.cancelled()) + " cells cancelled (the whole study)");
  EXPECT_THAT(entries[4].detail(), HasSubstr("cells added"));
  EXPECT_EQ(entries[0].detail(), "token 'prom' (read)");
  for (size_t i = 1; i < entries.size(); ++i) {
    EXPECT_GT(entries[i - 1].id(), entries[i].id());
  }
  EXPECT_EQ(Audit("small").size(), 3u);

  v1::ReadAuditRequest bad;
  bad.set_page_token("x");
  v1::ReadAuditResponse response;
  EXPECT_EQ(Access()->ReadAudit(Ctx().get(), bad, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  bad.set_page_token("");
  bad.set_page_size(kMaxAuditPage + 1);
  EXPECT_EQ(Access()->ReadAudit(Ctx().get(), bad, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace onset::coordinator
