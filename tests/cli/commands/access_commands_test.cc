// What the token and audit commands check before they call the coordinator: a client that
// reaches nothing shows that no call was made (a call would fail with exit code 1).
#include "cli/commands/access_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli/exit_codes.h"
#include "tests/testing/temp_dir.h"

namespace onset::cli {
namespace {

using ::testing::HasSubstr;

class AccessCommandsTest : public ::testing::Test {
 protected:
  // Port 1 on loopback: nothing answers there.
  StudyClient client_{"127.0.0.1:1", common::ClientSecurity{"t", ""},
                      std::chrono::milliseconds(2000)};
  std::ostringstream out_, err_;
};

TEST_F(AccessCommandsTest, AnUnknownRoleIsBadInput) {
  EXPECT_EQ(TokenCreateCommand(client_, "prom", "reader", "", out_, err_), kExitBadInput);
  EXPECT_THAT(err_.str(), HasSubstr("'reader' is not a role: read, worker, submit or admin"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(AccessCommandsTest, AnOutFileThatExistsIsRefusedBeforeATokenIsMade) {
  testutil::TempDir dir;
  const std::string taken = dir.Write("taken", "keep me\n");
  EXPECT_EQ(TokenCreateCommand(client_, "prom", "read", taken, out_, err_), kExitBadInput);
  EXPECT_THAT(err_.str(), HasSubstr("exists: name a new file"));
  std::ifstream in(taken);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "keep me\n");
  EXPECT_EQ(TokenCreateCommand(client_, "prom", "read", dir.File("no/such/dir/f"), out_, err_),
            kExitBadInput);
  EXPECT_THAT(err_.str(), HasSubstr("is not a directory"));
}

TEST_F(AccessCommandsTest, TheAuditLimitIsBounded) {
  EXPECT_EQ(AuditCommand(client_, "", 0, false, out_, err_), kExitBadInput);
  EXPECT_EQ(AuditCommand(client_, "", kMaxAuditLimit + 1, false, out_, err_), kExitBadInput);
  EXPECT_THAT(err_.str(), HasSubstr("--limit: 1 to 100000"));
  // Within bounds the call is made: nothing answers, so it fails.
  EXPECT_EQ(AuditCommand(client_, "", 10, false, out_, err_), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("cannot reach the coordinator at 127.0.0.1:1"));
}

}  // namespace
}  // namespace onset::cli
