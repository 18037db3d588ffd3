// Online backups: a copy taken while another connection keeps committing is consistent (passes
// integrity_check), holds every row committed before it began, is one file in rollback-journal
// mode, and the copy finishes although writes never pause; rotating backups keep the newest N.
#include "db/online_backup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

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

TEST(OnlineBackupTest, ACopyTakenWhileWritesGoOnIsConsistentAndComplete) {
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  absl::StatusOr<std::unique_ptr<Connection>> writer = Connection::Open(path);
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
  absl::StatusOr<int64_t> size = BackupDatabaseFile(path, dir.File("copy.db"));
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
  // Nothing beside it: no temporary file, no -wal or -shm.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path())) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files,
            (std::vector<std::string>{"copy.db", "onset.db", "onset.db-shm", "onset.db-wal"}));
}

TEST(OnlineBackupTest, AMissingSourceIsNamedAndLeavesNothing) {
  testutil::TempDir dir;
  absl::StatusOr<int64_t> size = BackupDatabaseFile(dir.File("nope.db"), dir.File("copy.db"));
  ASSERT_FALSE(size.ok());
  EXPECT_NE(std::string(size.status().message()).find("nope.db"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(OnlineBackupTest, RotatingBackupsKeepTheNewest) {
  testutil::TempDir dir;
  const std::string path = dir.File("onset.db");
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (x INTEGER)").ok());
  }
  const std::string backups = dir.File("backups");
  fs::create_directories(backups);
  std::ofstream(backups + "/notes.txt") << "not a backup: left alone\n";
  const int64_t t0 = 1'796'558'400'000;  // 2026-12-06T12:00:00Z
  std::vector<std::string> written;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<std::string> file = WriteRotatingBackup(path, backups, 2, t0 + i * 3'600'000);
    ASSERT_TRUE(file.ok()) << file.status();
    written.push_back(fs::path(*file).filename());
  }
  EXPECT_EQ(written.front(), "onset-20261206T120000Z.db");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(backups)) left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"notes.txt", "onset-20261206T140000Z.db",
                                            "onset-20261206T150000Z.db"}));
}

}  // namespace
}  // namespace onset::db
