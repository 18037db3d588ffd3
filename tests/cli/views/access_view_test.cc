#include "cli/views/access_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AccessViewTest, TimesAreUtcToTheSecond) {
  EXPECT_EQ(UtcTime(0), "-");
  EXPECT_EQ(UtcTime(1'714'572'187'999), "2024-05-01 14:03:07Z");
}

TEST(AccessViewTest, TokensShowNamesRolesAndRevocationsNeverSecrets) {
  v1::ListTokensResponse list;
  v1::TokenInfo* file = list.add_tokens();
  file->set_name("onsetd.token");
  file->set_role("admin");
  file->set_token_file(true);
  v1::TokenInfo* prom = list.add_tokens();
  prom->set_name("prom");
  prom->set_role("read");
  prom->set_created_unix_ms(1'714'572'187'000);
  prom->set_created_by("onsetd.token");
  prom->set_revoked_unix_ms(1'714'575'787'000);
  prom->set_revoked_by("alice");
  const std::string text = RenderTokens(list);
  EXPECT_THAT(text, HasSubstr("NAME"));
  EXPECT_THAT(text, HasSubstr("onsetd.token  admin  (the token file)"));
  EXPECT_THAT(text, HasSubstr("prom"));
  EXPECT_THAT(text, HasSubstr("2024-05-01 14:03:07Z"));
  EXPECT_THAT(text, HasSubstr("2024-05-01 15:03:07Z  alice"));
}

TEST(AccessViewTest, AuditRowsSayWhoDidWhatAndWhetherThereIsMore) {
  EXPECT_EQ(RenderAudit({}, false), "no audit entries\n");
  v1::AuditEntry cancel;
  cancel.set_at_unix_ms(1'714'572'187'000);
  cancel.set_token_name("alice");
  cancel.set_role("submit");
  cancel.set_peer("ipv4:127.0.0.1:5000");
  cancel.set_action("cancel");
  cancel.set_study("demo");
  cancel.set_detail("2 cells cancelled (2 named)");
  v1::AuditEntry create = cancel;
  create.set_action("token-create");
  create.set_study("");
  create.set_detail("token 'prom' (read)");
  const std::string text = RenderAudit({cancel, create}, /*more=*/true);
  EXPECT_THAT(text, HasSubstr("alice  submit  ipv4:127.0.0.1:5000  cancel        demo"));
  EXPECT_THAT(text, HasSubstr("token-create  -      token 'prom' (read)"));
  EXPECT_THAT(text, HasSubstr("older entries are not shown"));
  EXPECT_THAT(RenderAudit({cancel}, false), Not(HasSubstr("older entries")));
}

}  // namespace
}  // namespace onset::cli
