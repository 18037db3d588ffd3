#include "db/database_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DatabaseLockTest, TheLockFileSaysWhoHoldsIt) {
  testutil::TempDir dir;
  const std::string db = dir.File("data/onset.db");  // the directory is made
  absl::StatusOr<std::unique_ptr<DatabaseLock>> lock = DatabaseLock::Acquire(db);
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_EQ((*lock)->path(), db + ".lock");
  EXPECT_THAT(Contents(db + ".lock"), StartsWith("pid " + std::to_string(getpid()) + " on "));
}

TEST(DatabaseLockTest, ASecondHolderIsRefusedWithTheFirstsPid) {
  testutil::TempDir dir;
  const std::string db = dir.File("onset.db");
  absl::StatusOr<std::unique_ptr<DatabaseLock>> first = DatabaseLock::Acquire(db);
  ASSERT_TRUE(first.ok()) << first.status();

  absl::StatusOr<std::unique_ptr<DatabaseLock>> second = DatabaseLock::Acquire(db);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              HasSubstr("database " + db + " is in use: pid " + std::to_string(getpid()) + " on "));
  EXPECT_THAT(second.status().message(), HasSubstr("holds " + db + ".lock"));

  first->reset();
  EXPECT_EQ(Contents(db + ".lock"), "");  // names no one once released
  EXPECT_TRUE(DatabaseLock::Acquire(db).ok());
}

// One database reached by two names (a link to the file,
// a link to its directory) is one lock, so two coordinators cannot both serve it.
TEST(DatabaseLockTest, ADatabaseReachedThroughALinkIsLockedWhereItIs) {
  testutil::TempDir dir;
  std::filesystem::create_directories(dir.File("x"));
  std::filesystem::create_directories(dir.File("y"));
  std::ofstream(dir.File("x/onset.db")).close();
  std::filesystem::create_symlink(dir.File("x/onset.db"), dir.File("y/onset.db"));
  std::filesystem::create_directory_symlink(dir.File("x"), dir.File("z"));
  absl::StatusOr<std::unique_ptr<DatabaseLock>> first =
      DatabaseLock::Acquire(dir.File("x/onset.db"));
  ASSERT_TRUE(first.ok()) << first.status();
  for (const std::string& other : {dir.File("y/onset.db"), dir.File("z/onset.db")}) {
    absl::StatusOr<std::unique_ptr<DatabaseLock>> second = DatabaseLock::Acquire(other);
    ASSERT_FALSE(second.ok()) << other;
    EXPECT_THAT(std::string(second.status().message()), HasSubstr("is in use"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("y/onset.db.lock")));
}

TEST(DatabaseLockTest, ALockFileLeftBehindDoesNotBlock) {
  testutil::TempDir dir;
  const std::string db = dir.File("onset.db");
  // What a killed holder leaves: the file with its pid, but no lock (the kernel dropped it).
  std::ofstream(db + ".lock") << "pid 4242 on elsewhere\n";
  absl::StatusOr<std::unique_ptr<DatabaseLock>> lock = DatabaseLock::Acquire(db);
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_THAT(Contents(db + ".lock"), StartsWith("pid " + std::to_string(getpid()) + " on "));
}

TEST(DatabaseLockTest, AnUnwritableDirectoryIsNamed) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes any directory";
  testutil::TempDir dir;
  const std::string ro = dir.File("ro");
  std::filesystem::create_directories(ro);
  std::filesystem::permissions(
      ro, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  absl::StatusOr<std::unique_ptr<DatabaseLock>> lock = DatabaseLock::Acquire(ro + "/onset.db");
  std::filesystem::permissions(ro, std::filesystem::perms::owner_all);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(lock.status().message(), HasSubstr("the directory " + ro));
}

}  // namespace
}  // namespace onset::db
