#include "common/study_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/testing/temp_dir.h"

namespace onset::common {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class StudyTextTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  testutil::TempDir tmp_;
  fs::path dir_{tmp_.path()};
};

TEST_F(StudyTextTest, Utf8) {
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("caf\xe9"), 3u);            // Latin-1
  EXPECT_EQ(FirstInvalidUtf8("a\xc0\xaf"), 1u);          // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("a\xed\xa0\x80"), 1u);      // a surrogate
  EXPECT_EQ(FirstInvalidUtf8("a\xf4\x90\x80\x80"), 1u);  // above U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("ab\xe2\x82"), 2u);         // truncated
  EXPECT_EQ(FirstInvalidUtf8("\x80"), 0u);               // a lone continuation byte
}

TEST_F(StudyTextTest, ReadsAStudyFile) {
  absl::StatusOr<std::string> text = ReadStudyFile(Write("s.yaml", "name: a\n"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "name: a\n");
}

TEST_F(StudyTextTest, MissingFileIsNotFound) {
  absl::StatusOr<std::string> text = ReadStudyFile((dir_ / "nope.yaml").string());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      std::string(text.status().message()),
      HasSubstr("cannot open " + (dir_ / "nope.yaml").string() + ": No such file or directory"));
}

TEST_F(StudyTextTest, DirectoryIsNotAStudyFile) {
  absl::StatusOr<std::string> text = ReadStudyFile(dir_.string());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), dir_.string() + " is a directory, not a study file");
}

TEST_F(StudyTextTest, NotUtf8SaysWhere) {
  const std::string path = Write("latin1.yaml", "name: a\ndescription: caf\xe9\n");
  absl::StatusOr<std::string> text = ReadStudyFile(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            path + ":2: the file is not UTF-8 text (byte 0xe9 at offset 24)");
}

TEST_F(StudyTextTest, LargeFileIsRefusedBeforeItIsRead) {
  const std::string path = Write("big.yaml", std::string(kMaxStudyFileBytes + 1, '#'));
  absl::StatusOr<std::string> text = ReadStudyFile(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), path +
                                         ":1: the file is 1048577 bytes; a study file is at "
                                         "most 1048576 bytes (1 MiB)");
}

TEST_F(StudyTextTest, EndlessDeviceIsReadOnlyUpToTheLimit) {
  absl::StatusOr<std::string> text = ReadStudyFile("/dev/zero");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "/dev/zero:1: the file is more than 1048576 bytes; a study "
            "file is at most 1048576 bytes (1 MiB)");
}

TEST_F(StudyTextTest, FifoWithoutAWriterDoesNotHang) {
  const std::string path = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  absl::StatusOr<std::string> text = ReadStudyFile(path);
  ASSERT_TRUE(text.ok()) << text.status();  // no writer: end of file at once
  EXPECT_EQ(*text, "");
}

}  // namespace
}  // namespace onset::common
