#include "db/write_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/db/test_dir.h"

namespace onset::db {
namespace {

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
  testing::TempDir dir;
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
  testing::TempDir dir;
  WriteQueue queue(OpenWithTable(dir.File("q.db")));
  ASSERT_TRUE(queue.Run([](Connection& db) { return Insert(db, 1); }).ok());
  // Writes a row, then fails: the row must not stay.
  absl::Status failed = queue.Run([](Connection& db) -> absl::Status {
    if (absl::Status s = Insert(db, 2); !s.ok()) return s;
    return Insert(db, 1);  // duplicate key
  });
  EXPECT_FALSE(failed.ok());
  ASSERT_TRUE(queue.Run([](Connection& db) { return Insert(db, 3); }).ok());
  absl::StatusOr<int64_t> rows = queue.Run<int64_t>(
      [](Connection& db) -> absl::StatusOr<int64_t> { return Count(db); }, true);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, 2);  // 1 and 3
}

TEST(WriteQueueTest, RunAndRollBackShowsTheWriteButKeepsNothing) {
  testing::TempDir dir;
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
  absl::StatusOr<int64_t> rows = queue.Run<int64_t>(
      [](Connection& db) -> absl::StatusOr<int64_t> { return Count(db); }, true);
  EXPECT_EQ(*rows, 0);
  EXPECT_EQ(queue.commits(), commits);  // nothing was written, so no watcher wakes
}

TEST(WriteQueueTest, WaitForCommitWakesOnAWrite) {
  testing::TempDir dir;
  WriteQueue queue(OpenWithTable(dir.File("q.db")));
  const int64_t seen = queue.commits();
  EXPECT_EQ(queue.WaitForCommit(seen, 5), seen);
  std::thread writer([&] { (void)queue.Run([](Connection& db) { return Insert(db, 1); }); });
  EXPECT_GT(queue.WaitForCommit(seen, 10'000), seen);
  writer.join();
}

}  // namespace
}  // namespace onset::db
