// Where a backup may go: a new file or an earlier backup nobody served, never the database a
// coordinator serves (by its name, a link or another name of the same file), nor a file that
// belongs to a database, nor anything else that exists.
#include "db/backup_destination.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "db/database_lock.h"
#include "db/online_backup.h"
#include "db/schema.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class BackupDestinationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    served_ = dir_.File("onset.db");
    lock_ = *DatabaseLock::Acquire(served_);
    absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(served_);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    held_ = HeldFiles(served_, {});
  }

  std::string Refusal(const std::string& dest) const {
    const absl::Status s = CheckBackupDestination(dest, held_);
    EXPECT_FALSE(s.ok()) << dest << " was accepted";
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    return std::string(s.message());
  }

  testutil::TempDir dir_;
  std::string served_;
  std::unique_ptr<DatabaseLock> lock_;
  std::unique_ptr<Connection> db_;
  std::vector<FileIdentity> held_;
};

TEST_F(BackupDestinationTest, TheServedDatabaseIsRefusedByEveryName) {
  EXPECT_THAT(Refusal(served_), HasSubstr("the database the coordinator serves"));
  // Without the coordinator's list (a CLI on another machine), its lock still says so.
  EXPECT_THAT(CheckBackupDestination(served_, {}).message(), HasSubstr("a coordinator serves"));
  fs::create_symlink(served_, dir_.File("link.db"));
  EXPECT_THAT(Refusal(dir_.File("link.db")), HasSubstr("symbolic link"));
  fs::create_hard_link(served_, dir_.File("hard.db"));
  EXPECT_THAT(Refusal(dir_.File("hard.db")), HasSubstr("the database the coordinator serves"));
  // Nor is it one to replace when nobody says it is served: it is no backup.
  EXPECT_THAT(CheckBackupDestination(dir_.File("hard.db"), {}).message(),
              HasSubstr("not an onset backup"));
}

TEST_F(BackupDestinationTest, TheDatabasesOwnFilesAreRefused) {
  EXPECT_THAT(Refusal(served_ + "-wal"), HasSubstr("write-ahead log"));
  EXPECT_THAT(Refusal(served_ + ".lock"), HasSubstr("lock"));
  // Named as a companion of an existing database, though not there yet.
  EXPECT_THAT(Refusal(served_ + "-journal"), HasSubstr("-journal file of"));
  EXPECT_THAT(Refusal(served_ + ".generation"), HasSubstr(".generation file of"));
}

TEST_F(BackupDestinationTest, OnlyANewFileOrAnEarlierBackupIsAccepted) {
  EXPECT_TRUE(CheckBackupDestination(dir_.File("new.db"), held_).ok());
  std::ofstream(dir_.File("notes.txt")) << "mine\n";
  EXPECT_THAT(Refusal(dir_.File("notes.txt")), HasSubstr("not an onset backup"));
  fs::create_directories(dir_.File("sub"));
  EXPECT_THAT(Refusal(dir_.File("sub")), HasSubstr("directory"));
  {
    absl::StatusOr<std::unique_ptr<Connection>> other = OpenDatabase(dir_.File("other.db"));
    ASSERT_TRUE(other.ok());
  }
  EXPECT_THAT(Refusal(dir_.File("other.db")), HasSubstr("not an onset backup"));
  ASSERT_TRUE(BackupDatabaseFile(served_, dir_.File("b1.db"), BackupFileOptions{held_, 0},
                                 BackupStamp{1, "test"})
                  .ok());
  EXPECT_TRUE(CheckBackupDestination(dir_.File("b1.db"), held_).ok());
}

}  // namespace
}  // namespace onset::db
