// Online backups: a copy taken while another connection keeps committing is consistent (passes
// integrity_check), holds every row committed before it began, is one file in rollback-journal
// mode stamped as a backup, and the copy finishes although writes never pause; what fails leaves
// nothing behind.
#include "db/online_backup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "db/instance.h"
#include "db/schema.h"
#include "db/sqlite.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;

int64_t Count(Connection& db, const std::string& sql) {
  absl::StatusOr<Statement> stmt = db.Prepare(sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  EXPECT_TRUE(row.ok() && *row);
  return stmt->Int(0);
}

std::string Text(Connection& db, const std::string& sql) {
  absl::StatusOr<Statement> stmt = db.Prepare(sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  EXPECT_TRUE(row.ok() && *row);
  return stmt->Text(0);
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(OnlineBackupTest, ACopyTakenWhileWritesGoOnIsConsistentCompleteAndStamped) {
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  absl::StatusOr<std::unique_ptr<Connection>> writer = OpenDatabase(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Exec("CREATE TABLE points (id INTEGER PRIMARY KEY, value TEXT)").ok());
  // Enough rows that the copy takes a while.
  ASSERT_TRUE((*writer)
                  ->Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i "
                         "< 50000) INSERT INTO points (value) SELECT hex(randomblob(64)) FROM n")
                  .ok());

  std::atomic<bool> stop{false};
  std::atomic<int64_t> committed{0};
  std::thread writes([&] {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
    ASSERT_TRUE(db.ok());
    while (!stop) {
      ASSERT_TRUE((*db)->Exec("INSERT INTO points (value) VALUES ('more')").ok());
      ++committed;
    }
  });
  while (committed < 100) std::this_thread::yield();
  const int64_t before = Count(**writer, "SELECT COUNT(*) FROM points");
  absl::StatusOr<int64_t> size = BackupDatabaseFile(path, dir.File("copy.db"), BackupFileOptions{},
                                                    BackupStamp{1234, "a test"});
  const int64_t during = committed;
  while (committed < during + 100) std::this_thread::yield();  // writes went on
  stop = true;
  writes.join();
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, static_cast<int64_t>(fs::file_size(dir.File("copy.db"))));

  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> copy =
      Connection::Open(dir.File("copy.db"), read_only);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(Text(**copy, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Text(**copy, "PRAGMA journal_mode"), "delete");
  EXPECT_GE(Count(**copy, "SELECT COUNT(*) FROM points"), before);
  EXPECT_LE(Count(**copy, "SELECT COUNT(*) FROM points"),
            Count(**writer, "SELECT COUNT(*) FROM points"));
  copy->reset();
  absl::StatusOr<std::optional<BackupStamp>> stamp = ReadBackupStamp(dir.File("copy.db"));
  ASSERT_TRUE(stamp.ok()) << stamp.status();
  ASSERT_TRUE(stamp->has_value());
  EXPECT_EQ((*stamp)->taken_unix_ms, 1234);
  EXPECT_EQ((*stamp)->source, "a test");
  // The source is no backup, and nothing is left beside the copy: no temporary file, no journal,
  // no -wal or -shm.
  absl::StatusOr<std::optional<BackupStamp>> source = ReadBackupStamp(path);
  ASSERT_TRUE(source.ok());
  EXPECT_FALSE(source->has_value());
  EXPECT_EQ(Files(dir.path()),
            (std::vector<std::string>{"copy.db", "onset.db", "onset.db-shm", "onset.db-wal"}));
}

TEST(OnlineBackupTest, AMissingSourceIsNamedAndLeavesNothing) {
  testutil::TempDir dir;
  absl::StatusOr<int64_t> size = BackupDatabaseFile(dir.File("nope.db"), dir.File("copy.db"),
                                                    BackupFileOptions{}, BackupStamp{});
  ASSERT_FALSE(size.ok());
  EXPECT_NE(std::string(size.status().message()).find("nope.db"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(OnlineBackupTest, ADatabaseWithoutTheInstanceRowCannotBeStampedAndLeavesNothing) {
  testutil::TempDir dir;
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(dir.File("other.db"));
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (x INTEGER)").ok());
  }
  absl::StatusOr<int64_t> size = BackupDatabaseFile(dir.File("other.db"), dir.File("copy.db"),
                                                    BackupFileOptions{}, BackupStamp{});
  ASSERT_FALSE(size.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(size.status())) << size.status();
  for (const std::string& file : Files(dir.path())) {
    EXPECT_EQ(file.rfind("other.db", 0), 0u) << file << " was left behind";
  }
}

}  // namespace
}  // namespace onset::db
