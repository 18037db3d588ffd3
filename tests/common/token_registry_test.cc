#include "common/token_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/sha256.h"

namespace onset::common {
namespace {

using ::testing::HasSubstr;

TEST(TokenNameTest, NamesAreShortLowercaseWordsAndTheFileTokenIsReserved) {
  for (const std::string& good : {std::string("prom"), std::string("0"),
                                  std::string("ci-runner_2.eu"), std::string(64, 'a')}) {
    EXPECT_TRUE(CheckTokenName(good).ok()) << good;
  }
  EXPECT_THAT(std::string(CheckTokenName("").message()), HasSubstr("1 to 64 characters"));
  EXPECT_THAT(std::string(CheckTokenName(std::string(65, 'a')).message()),
              HasSubstr("1 to 64 characters"));
  for (const char* bad : {"-x", ".x", "_x"}) {
    EXPECT_THAT(std::string(CheckTokenName(bad).message()), HasSubstr("must start with")) << bad;
  }
  for (const char* bad : {"pRom", "a b", "a/b", "a'b", "aé", "a\n"}) {
    EXPECT_THAT(std::string(CheckTokenName(bad).message()), HasSubstr("may hold only")) << bad;
  }
  EXPECT_THAT(std::string(CheckTokenName(kFileTokenName).message()),
              HasSubstr("is the coordinator's token file's"));
}

TEST(TokenRegistryTest, FindsByTheSecretOnlyAndForgetsARemovedToken) {
  TokenRegistry tokens;
  tokens.AddSecret("secret-of-prom", {"prom", Role::kRead});
  tokens.Add(base::Sha256Hex("secret-of-ci"), {"ci", Role::kSubmit});
  EXPECT_EQ(tokens.size(), 2u);
  std::optional<Caller> prom = tokens.Find("secret-of-prom");
  ASSERT_TRUE(prom.has_value());
  EXPECT_EQ(prom->token_name, "prom");
  EXPECT_EQ(prom->role, Role::kRead);
  ASSERT_TRUE(tokens.Find("secret-of-ci").has_value());
  EXPECT_EQ(tokens.Find("secret-of-ci")->role, Role::kSubmit);
  // What the registry keeps, the digest, is no credential; nor is a part of a secret.
  EXPECT_FALSE(tokens.Find(base::Sha256Hex("secret-of-prom")).has_value());
  EXPECT_FALSE(tokens.Find("secret-of-pro").has_value());
  EXPECT_FALSE(tokens.Find("").has_value());

  tokens.Remove("prom");
  EXPECT_FALSE(tokens.Find("secret-of-prom").has_value());
  EXPECT_TRUE(tokens.Find("secret-of-ci").has_value());
  tokens.Remove("nobody");
  EXPECT_EQ(tokens.size(), 1u);
}

TEST(TokenRegistryTest, ANameAddedAgainReplacesItsOldSecret) {
  TokenRegistry tokens;
  tokens.AddSecret("old", {"prom", Role::kRead});
  tokens.AddSecret("new", {"prom", Role::kRead});
  EXPECT_FALSE(tokens.Find("old").has_value());
  EXPECT_TRUE(tokens.Find("new").has_value());
  EXPECT_EQ(tokens.size(), 1u);
}

TEST(TokenRegistryTest, TheFileTokenIsAnAdmin) {
  std::shared_ptr<TokenRegistry> tokens = TokenRegistry::WithFileToken("file-secret");
  std::optional<Caller> caller = tokens->Find("file-secret");
  ASSERT_TRUE(caller.has_value());
  EXPECT_EQ(caller->token_name, kFileTokenName);
  EXPECT_EQ(caller->role, Role::kAdmin);
}

TEST(TokenRegistryTest, AnAuthorizationHeaderNamesItsBearer) {
  TokenRegistry tokens;
  tokens.AddSecret("abc", {"prom", Role::kRead});
  EXPECT_EQ(BearerHeaderCaller("Bearer abc", tokens)->token_name, "prom");
  EXPECT_FALSE(BearerHeaderCaller("Bearer abcd", tokens).has_value());
  EXPECT_FALSE(BearerHeaderCaller("Bearer ab", tokens).has_value());
  EXPECT_FALSE(BearerHeaderCaller("Basic abc", tokens).has_value());
  EXPECT_FALSE(BearerHeaderCaller("abc", tokens).has_value());
  EXPECT_FALSE(BearerHeaderCaller("", tokens).has_value());
}

}  // namespace
}  // namespace onset::common
