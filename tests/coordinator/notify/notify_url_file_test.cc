#include "coordinator/notify/notify_url_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/testing/temp_dir.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string WriteWithMode(const testutil::TempDir& dir, const std::string& name,
                          const std::string& text, mode_t mode) {
  const std::string path = dir.Write(name, text);
  EXPECT_EQ(chmod(path.c_str(), mode), 0);
  return path;
}

TEST(NotifyUrlFileTest, OneUrlALineWithoutBlankLinesAndComments) {
  testutil::TempDir dir;
  const std::string path =
      WriteWithMode(dir, "hooks",
                    "# the lab's channel\n"
                    "https://hooks.slack.com/services/T0/B0/XYZ\n"
                    "\n"
                    "   http://user:pw@alerts.internal:8080/hook?key=secret   \n"
                    "  # a comment after blanks\n",
                    0600);
  absl::StatusOr<std::vector<std::string>> urls = ReadNotifyUrlFile(path);
  ASSERT_TRUE(urls.ok()) << urls.status();
  EXPECT_THAT(*urls, ElementsAre("https://hooks.slack.com/services/T0/B0/XYZ",
                                 "http://user:pw@alerts.internal:8080/hook?key=secret"));
}

TEST(NotifyUrlFileTest, AFileOthersMayReadIsRefusedAsATokenFileIs) {
  testutil::TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0660}) {
    const std::string path =
        WriteWithMode(dir, "hooks-" + std::to_string(mode), "https://h/secret\n", mode);
    absl::StatusOr<std::vector<std::string>> urls = ReadNotifyUrlFile(path);
    EXPECT_EQ(urls.status().code(), absl::StatusCode::kPermissionDenied) << mode;
    EXPECT_THAT(urls.status().message(), HasSubstr("notify URL file " + path));
    EXPECT_THAT(urls.status().message(), HasSubstr("chmod 600 " + path));
  }
  EXPECT_EQ(ReadNotifyUrlFile(dir.File("missing")).status().code(), absl::StatusCode::kNotFound);
  const std::string fifo = dir.File("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  absl::StatusOr<std::vector<std::string>> from_fifo = ReadNotifyUrlFile(fifo);  // no hang
  EXPECT_EQ(from_fifo.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(from_fifo.status().message(), HasSubstr("FIFO"));
  EXPECT_EQ(ReadNotifyUrlFile("/dev/null").status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(NotifyUrlFileTest, ABadLineIsNamedByItsNumberNeverWithItsSecret) {
  testutil::TempDir dir;
  const std::string path =
      WriteWithMode(dir, "hooks", "https://ok.example/a\nftp://files.example/s3cret-path\n", 0600);
  absl::StatusOr<std::vector<std::string>> urls = ReadNotifyUrlFile(path);
  EXPECT_EQ(urls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(urls.status().message(), HasSubstr(path + ":2: webhook URL ftp://files.example/"));
  EXPECT_THAT(urls.status().message(), Not(HasSubstr("s3cret")));

  const std::string empty = WriteWithMode(dir, "empty", "# nothing yet\n\n", 0600);
  EXPECT_THAT(std::string(ReadNotifyUrlFile(empty).status().message()), HasSubstr("holds no URL"));
  std::string many;
  for (size_t i = 0; i <= kMaxNotifyUrls; ++i) many += "https://h/" + std::to_string(i) + "\n";
  const std::string too_many = WriteWithMode(dir, "many", many, 0600);
  EXPECT_THAT(std::string(ReadNotifyUrlFile(too_many).status().message()),
              HasSubstr("more than 100 URLs"));
  const std::string large =
      WriteWithMode(dir, "large", std::string(kMaxNotifyUrlFileBytes + 1, '#'), 0600);
  EXPECT_THAT(std::string(ReadNotifyUrlFile(large).status().message()), HasSubstr("larger than"));
}

}  // namespace
}  // namespace onset::coordinator
