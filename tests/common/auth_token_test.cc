#include "common/auth_token.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/fifo.h"
#include "tests/testing/temp_dir.h"

namespace onset::common {
namespace {

using ::testing::HasSubstr;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string WriteWithMode(const testutil::TempDir& dir, const std::string& name,
                          const std::string& text, mode_t mode) {
  const std::string path = dir.Write(name, text);
  EXPECT_EQ(chmod(path.c_str(), mode), 0);
  return path;
}

TEST(LoadOrCreateTokenFileTest, CreatesAPrivateRandomTokenOnceAndKeepsIt) {
  testutil::TempDir dir;
  const std::string path = dir.File(kTokenFileName);
  absl::StatusOr<std::string> first = LoadOrCreateTokenFile(path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 2u * kTokenBytes);
  EXPECT_EQ(first->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(ModeOf(path), 0600u);

  absl::StatusOr<std::string> again = LoadOrCreateTokenFile(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);

  testutil::TempDir other;
  EXPECT_NE(*LoadOrCreateTokenFile(other.File(kTokenFileName)), *first);
}

TEST(LoadOrCreateTokenFileTest, ConcurrentCreatorsAgreeOnOneToken) {
  testutil::TempDir dir;
  const std::string path = dir.File(kTokenFileName);
  std::vector<std::string> tokens(8);
  std::vector<std::thread> threads;
  for (std::string& token : tokens) {
    threads.emplace_back([&path, &token] {
      absl::StatusOr<std::string> t = LoadOrCreateTokenFile(path);
      token = t.ok() ? *t : "error: " + t.status().ToString();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& token : tokens) EXPECT_EQ(token, tokens[0]);
  // The losers' temporary files are gone.
  int entries = 0;
  if (DIR* d = opendir(dir.path().c_str())) {
    while (const dirent* e = readdir(d)) entries += e->d_name[0] != '.';
    closedir(d);
  }
  EXPECT_EQ(entries, 1);
}

TEST(LoadOrCreateTokenFileTest, RefusesAShortHandWrittenToken) {
  testutil::TempDir dir;
  const std::string path = WriteWithMode(dir, "t", "short\n", 0600);
  absl::StatusOr<std::string> token = LoadOrCreateTokenFile(path);
  EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(token.status().message(), HasSubstr("too short"));
}

TEST(LoadOrCreateTokenFileTest, AMissingDirectoryIsAnError) {
  testutil::TempDir dir;
  EXPECT_FALSE(LoadOrCreateTokenFile(dir.File("no/such/dir/token")).ok());
}

TEST(ReadTokenFileTest, ReadsTheFirstLineTrimmed) {
  testutil::TempDir dir;
  const std::string path = WriteWithMode(dir, "t", "  s3cret-token \nsecond line\n", 0600);
  EXPECT_EQ(*ReadTokenFile(path), "s3cret-token");
  EXPECT_EQ(*ReadTokenFile(WriteWithMode(dir, "u", "abc", 0400)), "abc");
}

TEST(ReadTokenFileTest, RefusesAFileThatGroupOrOthersMayAccess) {
  testutil::TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0620, 0602, 0610}) {
    const std::string path = WriteWithMode(dir, "t", "s3cret\n", mode);
    absl::StatusOr<std::string> token = ReadTokenFile(path);
    EXPECT_EQ(token.status().code(), absl::StatusCode::kPermissionDenied) << std::oct << mode;
    EXPECT_THAT(token.status().message(), HasSubstr("chmod 600 " + path));
    EXPECT_THAT(token.status().message(), ::testing::Not(HasSubstr("s3cret")));
  }
}

TEST(ReadTokenFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  testutil::TempDir dir;
  const std::string fifo = testutil::MakeFifo(dir.File("token"));
  absl::StatusOr<std::string> token;
  EXPECT_TRUE(testutil::ReturnsWithoutAWriter(fifo, [&] { token = ReadTokenFile(fifo); }));
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), HasSubstr("is not a regular file (a FIFO)"));
}

TEST(ReadTokenFileTest, MissingEmptyAndBinaryFiles) {
  testutil::TempDir dir;
  EXPECT_EQ(ReadTokenFile(dir.File("none")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadTokenFile(WriteWithMode(dir, "e", "\n", 0600)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(WriteWithMode(dir, "b", std::string("ab\0cd", 5), 0600)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(dir.path()).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(ValidateTokenTest, AcceptsVisibleAsciiOnly) {
  EXPECT_TRUE(ValidateToken("abc-DEF_123.~!").ok());
  EXPECT_FALSE(ValidateToken("").ok());
  EXPECT_FALSE(ValidateToken("a b").ok());
  EXPECT_FALSE(ValidateToken("a\tb").ok());
  EXPECT_FALSE(ValidateToken("a\x7f").ok());
  EXPECT_FALSE(ValidateToken("caf\xc3\xa9").ok());
}

TEST(ResolveClientTokenTest, FlagThenEnvironmentThenEnvironmentFileThenDefaultFile) {
  testutil::TempDir dir;
  const std::string flag = WriteWithMode(dir, "flag", "from-flag\n", 0600);
  const std::string env_file = WriteWithMode(dir, "env", "from-env-file\n", 0600);
  const std::string default_file = WriteWithMode(dir, "default", "from-default\n", 0600);

  TokenSources all{flag, "from-env", env_file, default_file};
  EXPECT_EQ(*ResolveClientToken(all), "from-flag");
  all.flag_file.clear();
  EXPECT_EQ(*ResolveClientToken(all), "from-env");
  all.env_token.clear();
  EXPECT_EQ(*ResolveClientToken(all), "from-env-file");
  all.env_token_file.clear();
  EXPECT_EQ(*ResolveClientToken(all), "from-default");
}

TEST(ResolveClientTokenTest, SaysHowToPassATokenWhenThereIsNone) {
  testutil::TempDir dir;
  absl::StatusOr<std::string> none = ResolveClientToken({"", "", "", dir.File("absent")});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("--token-file"));
  EXPECT_THAT(none.status().message(), HasSubstr("ONSET_TOKEN"));
}

TEST(ResolveClientTokenTest, ANamedFileMustBeUsable) {
  testutil::TempDir dir;
  EXPECT_EQ(ResolveClientToken({dir.File("absent"), "from-env", "", ""}).status().code(),
            absl::StatusCode::kNotFound);
  const std::string open_file = WriteWithMode(dir, "open", "tok\n", 0644);
  EXPECT_EQ(ResolveClientToken({"", "", "", open_file}).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ResolveClientToken({"", "bad token", "", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ChooseTokenSourceTest, TheFirstSourceSetInTheFlagEnvironmentDefaultOrder) {
  using Kind = TokenSource::Kind;
  TokenSources all{"flag.token", "env-token", "env.token", "default.token"};
  EXPECT_EQ(ChooseTokenSource(all).kind, Kind::kFlagFile);
  EXPECT_EQ(ChooseTokenSource(all).file, "flag.token");
  all.flag_file.clear();
  EXPECT_EQ(ChooseTokenSource(all).kind, Kind::kEnvToken);
  EXPECT_EQ(ChooseTokenSource(all).file, "");
  all.env_token.clear();
  EXPECT_EQ(ChooseTokenSource(all).kind, Kind::kEnvTokenFile);
  EXPECT_EQ(ChooseTokenSource(all).file, "env.token");
  all.env_token_file.clear();
  EXPECT_EQ(ChooseTokenSource(all).kind, Kind::kDefaultFile);
  EXPECT_EQ(ChooseTokenSource(all).file, "default.token");
  all.default_file.clear();
  EXPECT_EQ(ChooseTokenSource(all).kind, Kind::kNone);
}

}  // namespace
}  // namespace onset::common
