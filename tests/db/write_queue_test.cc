#include "db/write_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/db/log_capture.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Connection> OpenWithTable(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  EXPECT_TRUE((*db)->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").ok());
  return *std::move(db);
}

int64_t Count(Connection& db, const std::string& where = "1") {
  absl::StatusOr<Statement> stmt = db.Prepare("SELECT COUNT(*) FROM t WHERE " + where);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  EXPECT_TRUE(*stmt->Step());
  return stmt->Int(0);
}

absl::Status Insert(Connection& db, int64_t k) {
  absl::StatusOr<Statement> stmt = db.Prepare("INSERT INTO t (k, v) VALUES (?, 'x')");
  if (!stmt.ok()) return stmt.status();
  stmt->BindAll(k);
  return stmt->Run();
}

TEST(WriteQueueTest, ConcurrentWritesShareTransactionsAndAllLand) {
  testutil::TempDir dir;
  WriteQueue queue(OpenWithTable(dir.File("q.db")));
  constexpr int kThreads = 8, kEach = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!queue.Run([&](Connection& db) { return Insert(db, t * kEach + i); }).ok()) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed, 0);
  absl::StatusOr<int64_t> rows = queue.Run<int64_t>(
      [](Connection& db) -> absl::StatusOr<int64_t> { return Count(db); }, /*roll_back=*/true);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, kThreads * kEach);
  // Eight writers that never wait for each other's commits would need 1600 transactions;
  // batching needs fewer (how many fewer depends on scheduling, so only "fewer" is asserted).
  EXPECT_LT(queue.commits(), kThreads * kEach);
  EXPECT_GE(queue.commits(), 1);
}

TEST(WriteQueueTest, AFailingOperationRollsBackOnlyItself) {
  testutil::TempDir dir;
  WriteQueue queue(OpenWithTable(dir.File("q.db")));
  ASSERT_TRUE(queue.Run([](Connection& db) { return Insert(db, 1); }).ok());
  // Writes a row, then fails: the row must not stay.
  absl::Status failed = queue.Run([](Connection& db) -> absl::Status {
    if (absl::Status s = Insert(db, 2); !s.ok()) return s;
    return Insert(db, 1);  // duplicate key
  });
  EXPECT_FALSE(failed.ok());
  ASSERT_TRUE(queue.Run([](Connection& db) { return Insert(db, 3); }).ok());
  absl::StatusOr<int64_t> rows =
      queue.Run<int64_t>([](Connection& db) -> absl::StatusOr<int64_t> { return Count(db); }, true);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, 2);  // 1 and 3
}

TEST(WriteQueueTest, RunAndRollBackShowsTheWriteButKeepsNothing) {
  testutil::TempDir dir;
  WriteQueue queue(OpenWithTable(dir.File("q.db")));
  const int64_t commits = queue.commits();
  absl::StatusOr<int64_t> seen = queue.Run<int64_t>(
      [](Connection& db) -> absl::StatusOr<int64_t> {
        if (absl::Status s = Insert(db, 7); !s.ok()) return s;
        return Count(db);
      },
      /*roll_back=*/true);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, 1);
  absl::StatusOr<int64_t> rows =
      queue.Run<int64_t>([](Connection& db) -> absl::StatusOr<int64_t> { return Count(db); }, true);
  EXPECT_EQ(*rows, 0);
  EXPECT_EQ(queue.commits(), commits);  // nothing was written, so no watcher wakes
}

TEST(WriteQueueTest, WaitForCommitWakesOnAWrite) {
  testutil::TempDir dir;
  WriteQueue queue(OpenWithTable(dir.File("q.db")));
  const int64_t seen = queue.commits();
  EXPECT_EQ(queue.WaitForCommit(seen, 5), seen);
  std::thread writer([&] { (void)queue.Run([](Connection& db) { return Insert(db, 1); }); });
  EXPECT_GT(queue.WaitForCommit(seen, 10'000), seen);
  writer.join();
}

TEST(WriteQueueTest, AWriteSQLiteRefusesSaysWhatFailedAndIsLogged) {
  testutil::TempDir dir;
  const std::string path = dir.File("q.db");
  std::unique_ptr<Connection> db = OpenWithTable(path);
  // What a database file that became read-only does to every write.
  ASSERT_TRUE(db->Exec("PRAGMA query_only=ON").ok());
  WriteQueue queue(std::move(db));
  testing::LogCapture log;

  absl::Status s = queue.Run([](Connection& db) { return Insert(db, 1); });
  // Not Unavailable: nothing passes by waiting, and clients would take it for a lost connection.
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_EQ(s.message(),
            "database write failed: attempt to write a readonly database (" + path + ")");
  ASSERT_TRUE(SqliteErrorOf(s).has_value());
  EXPECT_EQ(SqliteErrorOf(s)->code & 0xff, SQLITE_READONLY);
  // The log says which statement failed too.
  EXPECT_THAT(log.text(), HasSubstr("[error] database write failed: database " + path +
                                    ": attempt to write a readonly database (running '"));
}

TEST(WriteQueueTest, AnOperationsOwnErrorIsReturnedAsItIsAndNotLogged) {
  testutil::TempDir dir;
  WriteQueue queue(OpenWithTable(dir.File("q.db")));
  testing::LogCapture log;
  absl::Status s = queue.Run([](Connection&) { return absl::NotFoundError("no lease 'x'"); });
  EXPECT_EQ(s, absl::NotFoundError("no lease 'x'"));
  EXPECT_EQ(log.text(), "");
}

TEST(WriteQueueTest, ABusyDatabaseFailsAsUnavailableAndSaysSo) {
  testutil::TempDir dir;
  const std::string path = dir.File("q.db");
  Connection::Options quick;
  quick.busy_timeout_ms = 1;
  absl::StatusOr<std::unique_ptr<Connection>> writer = Connection::Open(path, quick);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").ok());
  WriteQueue queue(*std::move(writer));
  // Another program holds the write lock.
  absl::StatusOr<std::unique_ptr<Connection>> other = Connection::Open(path);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Exec("BEGIN IMMEDIATE").ok());
  testing::LogCapture log;

  absl::Status s = queue.Run([](Connection& db) { return Insert(db, 1); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(s.message(), "database write failed: database is locked (" + path + ")");
  EXPECT_THAT(log.text(), HasSubstr("(running 'BEGIN IMMEDIATE')"));
  ASSERT_TRUE((*other)->Exec("ROLLBACK").ok());
  EXPECT_TRUE(queue.Run([](Connection& db) { return Insert(db, 1); }).ok());
  EXPECT_THAT(log.text(), HasSubstr("[info] database writes succeed again (1 failed before)"));
}

}  // namespace
}  // namespace onset::db
