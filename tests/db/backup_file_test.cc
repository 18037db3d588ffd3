// Writing a backup's copy: a reserve of free space is kept, a stream from elsewhere cannot write
// outside the size it announced, a copy that is short, damaged or whose destination became
// something else is never renamed into place, and nothing is left behind then.
#include "db/backup_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "db/schema.h"
#include "db/snapshot_stream.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  return files;
}

class BackupFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.File("out"));
    absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(dir_.File("onset.db"));
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  std::string Out() const { return dir_.File("out") + "/copy.db"; }

  testutil::TempDir dir_;
  std::unique_ptr<Connection> db_;
};

TEST_F(BackupFileTest, ACopyThatWouldBreachTheReserveIsRefusedBeforeAnythingIsWritten) {
  BackupFileOptions options;
  options.reserve_bytes = int64_t{1} << 60;  // more than any disk has
  absl::StatusOr<std::unique_ptr<BackupFileWriter>> writer =
      BackupFileWriter::Create(Out(), options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const absl::Status streamed = StreamSnapshot(dir_.File("onset.db"), **writer);
  EXPECT_TRUE(absl::IsResourceExhausted(streamed)) << streamed;
  EXPECT_THAT(streamed.message(), HasSubstr("reserve"));
  writer->reset();
  EXPECT_THAT(Files(dir_.File("out")), ::testing::IsEmpty());
}

TEST_F(BackupFileTest, APieceOutsideTheAnnouncedSizeIsRefused) {
  absl::StatusOr<std::unique_ptr<BackupFileWriter>> writer =
      BackupFileWriter::Create(Out(), BackupFileOptions{{}, 0});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Start({4096, 0}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->Piece(4000, std::string(200, 'x'))));
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->Piece(-1, "x")));
  EXPECT_TRUE((*writer)->Piece(0, std::string(100, 'x')).ok());
}

TEST_F(BackupFileTest, AShortOrDamagedCopyIsNeverRenamedIntoPlace) {
  {
    absl::StatusOr<std::unique_ptr<BackupFileWriter>> writer =
        BackupFileWriter::Create(Out(), BackupFileOptions{{}, 0});
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Start({8192, 0}).ok());
    ASSERT_TRUE((*writer)->Piece(0, std::string(4096, 'x')).ok());
    absl::StatusOr<int64_t> finished = (*writer)->Finish(BackupStamp{});
    EXPECT_TRUE(absl::IsFailedPrecondition(finished.status())) << finished.status();
    EXPECT_THAT(finished.status().message(), HasSubstr("4096 of its 8192 bytes"));
  }
  {
    absl::StatusOr<std::unique_ptr<BackupFileWriter>> writer =
        BackupFileWriter::Create(Out(), BackupFileOptions{{}, 0});
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Start({8192, 0}).ok());
    ASSERT_TRUE((*writer)->Piece(0, std::string(8192, 'x')).ok());
    EXPECT_FALSE((*writer)->Finish(BackupStamp{}).ok());
  }
  EXPECT_THAT(Files(dir_.File("out")), ::testing::IsEmpty());
}

TEST_F(BackupFileTest, ADestinationThatBecameSomethingElseMeanwhileIsLeftAlone) {
  absl::StatusOr<std::unique_ptr<BackupFileWriter>> writer =
      BackupFileWriter::Create(Out(), BackupFileOptions{{}, 0});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(StreamSnapshot(dir_.File("onset.db"), **writer).ok());
  std::ofstream(Out()) << "someone else's file\n";
  absl::StatusOr<int64_t> finished = (*writer)->Finish(BackupStamp{7, "test"});
  EXPECT_TRUE(absl::IsFailedPrecondition(finished.status())) << finished.status();
  writer->reset();
  std::ifstream in(Out());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "someone else's file");
  EXPECT_EQ(Files(dir_.File("out")), (std::vector<std::string>{"copy.db"}));
}

TEST_F(BackupFileTest, AWholeCopyIsStampedAndInPlaceWithModeSixHundred) {
  absl::StatusOr<std::unique_ptr<BackupFileWriter>> writer =
      BackupFileWriter::Create(Out(), BackupFileOptions{{}, 0});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(StreamSnapshot(dir_.File("onset.db"), **writer).ok());
  absl::StatusOr<int64_t> finished = (*writer)->Finish(BackupStamp{7, "test"});
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(*finished, static_cast<int64_t>(fs::file_size(Out())));
  EXPECT_EQ(fs::status(Out()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  absl::StatusOr<std::optional<BackupStamp>> stamp = ReadBackupStamp(Out());
  ASSERT_TRUE(stamp.ok() && stamp->has_value());
  EXPECT_EQ((*stamp)->taken_unix_ms, 7);
  EXPECT_EQ(Files(dir_.File("out")), (std::vector<std::string>{"copy.db"}));
}

}  // namespace
}  // namespace onset::db
