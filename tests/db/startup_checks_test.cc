#include "db/startup_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "db/sqlite.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A database of `rows` rows of 200 random bytes, its WAL folded into the file.
void MakeDatabase(const std::string& path, int rows) {
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)
                    ->Exec("CREATE TABLE t (x BLOB);"
                           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                           "WHERE i < " +
                           std::to_string(rows) + ") INSERT INTO t SELECT randomblob(200) FROM n;")
                    .ok());
  }
  ASSERT_FALSE(fs::exists(path + "-wal"));
}

TEST(StartupChecksTest, AMissingFileIsCreatedAndAGoodDatabasePasses) {
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  EXPECT_TRUE(CheckDatabaseForServing(path, {}).ok());
  EXPECT_TRUE(fs::exists(path));
  MakeDatabase(path, 100);
  EXPECT_TRUE(CheckDatabaseForServing(path, {}).ok());
}

TEST(StartupChecksTest, AnEmptyFileIsRefusedUnlessAllowed) {
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  std::ofstream(path).close();
  absl::Status s = CheckDatabaseForServing(path, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("database " + path + " is an empty file (0 bytes)"));
  EXPECT_THAT(s.message(), HasSubstr("--init-empty-db"));
  EXPECT_EQ(fs::file_size(path), 0u);

  StartupCheckOptions allow;
  allow.allow_empty_file = true;
  EXPECT_TRUE(CheckDatabaseForServing(path, allow).ok());
}

TEST(StartupChecksTest, AFileOfSomethingElseIsNamedAsSuch) {
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  {
    std::ofstream out(path);
    for (int i = 0; i < 100; ++i) out << "step " << i << " loss 3.14\n";
  }
  absl::Status s = CheckDatabaseForServing(path, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(path + " is not an SQLite database"));
}

TEST(StartupChecksTest, ADirectoryIsNotADatabase) {
  testutil::TempDir dir;
  fs::create_directories(dir.File("onset.db"));
  absl::Status s = CheckDatabaseForServing(dir.File("onset.db"), {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("is not a file"));
}

TEST(StartupChecksTest, DamagedPagesAreFoundAndListed) {
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  MakeDatabase(path, 2000);
  const auto size = fs::file_size(path);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(size / 4096 / 2 * 4096));
    const std::string garbage(3 * 4096, '\xA5');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  absl::Status s = CheckDatabaseForServing(path, {});
  ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  SCOPED_TRACE(std::string(s.message()));
  // The findings name the pages: "Page 57: btreeInitPage() returns error code 11; ...".
  EXPECT_THAT(s.message(),
              HasSubstr("database " + path + " is damaged (PRAGMA quick_check: Page "));
  EXPECT_THAT(s.message(), HasSubstr("restore it from a backup"));

  // Asked not to read every page, the check passes over them.
  StartupCheckOptions quick;
  quick.quick_check = false;
  EXPECT_TRUE(CheckDatabaseForServing(path, quick).ok());
}

TEST(StartupChecksTest, AFileThisProcessCannotWriteIsRefused) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes any file (the integration test runs as nobody)";
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  MakeDatabase(path, 10);
  fs::permissions(path, fs::perms::owner_read);
  absl::Status s = CheckDatabaseForServing(path, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("database " + path + " is read-only for this process"));
}

TEST(StartupChecksTest, AnInMemoryDatabasePasses) {
  EXPECT_TRUE(CheckDatabaseForServing(":memory:", {}).ok());
}

}  // namespace
}  // namespace onset::db
