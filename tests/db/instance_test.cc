// What a database file is: attempt numbers apart per generation, the generation mark beside the
// file (links resolved), and the stamp of a backup as only backups carry it.
#include "db/instance.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "db/online_backup.h"
#include "db/schema.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;

TEST(InstanceTest, EachGenerationNumbersItsAttemptsApart) {
  EXPECT_EQ(AttemptFloor(1), 0);
  EXPECT_EQ(AttemptFloor(2), 1'000'000);
  EXPECT_EQ(AttemptFloor(3), 2'000'000);
  EXPECT_EQ(AttemptFloor(0), 0);
}

TEST(InstanceTest, AFreshDatabaseIsGenerationOneAndNoBackup) {
  testutil::TempDir dir;
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(dir.File("onset.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<InstanceInfo> info = ReadInstance(**db);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->generation, 1);
  EXPECT_FALSE(info->backup.has_value());
  EXPECT_FALSE(info->restored_unix_ms.has_value());
  EXPECT_EQ(info->claims_from_unix_ms, 0);
}

TEST(InstanceTest, OnlyAStampedCopyIsABackup) {
  testutil::TempDir dir;
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(dir.File("onset.db"));
    ASSERT_TRUE(db.ok());
  }
  for (const char* name : {"onset.db", "missing.db"}) {
    absl::StatusOr<std::optional<BackupStamp>> stamp = ReadBackupStamp(dir.File(name));
    ASSERT_TRUE(stamp.ok()) << name;
    EXPECT_FALSE(stamp->has_value()) << name;
  }
  std::ofstream(dir.File("notes.txt")) << "text\n";
  absl::StatusOr<std::optional<BackupStamp>> text = ReadBackupStamp(dir.File("notes.txt"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_FALSE(text->has_value());
  ASSERT_TRUE(BackupDatabaseFile(dir.File("onset.db"), dir.File("copy.db"),
                                 BackupFileOptions{{}, 0}, BackupStamp{42, "here"})
                  .ok());
  absl::StatusOr<std::optional<BackupStamp>> copy = ReadBackupStamp(dir.File("copy.db"));
  ASSERT_TRUE(copy.ok() && copy->has_value());
  EXPECT_EQ((*copy)->taken_unix_ms, 42);
  EXPECT_EQ((*copy)->source, "here");
}

TEST(InstanceTest, TheGenerationMarkLiesBesideTheFileItself) {
  testutil::TempDir dir;
  fs::create_directories(dir.File("data"));
  EXPECT_EQ(ReadGenerationMark(dir.File("data/onset.db")), 0);
  ASSERT_TRUE(WriteGenerationMark(dir.File("data/onset.db"), 3).ok());
  EXPECT_EQ(ReadGenerationMark(dir.File("data/onset.db")), 3);
  EXPECT_TRUE(fs::exists(dir.File("data/onset.db.generation")));
  // Reached through a linked directory, it is the same mark.
  fs::create_directory_symlink(dir.File("data"), dir.File("alias"));
  EXPECT_EQ(ReadGenerationMark(dir.File("alias/onset.db")), 3);
  std::ofstream(dir.File("data/onset.db.generation")) << "garbage\n";
  EXPECT_EQ(ReadGenerationMark(dir.File("data/onset.db")), 0);
}

}  // namespace
}  // namespace onset::db
