#include "db/read_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "db/write_queue.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

absl::StatusOr<int64_t> Count(Connection& db) {
  absl::StatusOr<Statement> stmt = db.Prepare("SELECT COUNT(*) FROM t");
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  return stmt->Int(0);
}

class ReadPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(dir_.File("r.db"));
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)").ok());
    writer_ = std::make_unique<WriteQueue>(*std::move(db));
    absl::StatusOr<std::unique_ptr<ReadPool>> pool = ReadPool::Open(dir_.File("r.db"), 2);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
  }
  absl::Status Insert(int64_t k) {
    return writer_->Run([k](Connection& db) -> absl::Status {
      absl::StatusOr<Statement> stmt = db.Prepare("INSERT INTO t (k) VALUES (?)");
      if (!stmt.ok()) return stmt.status();
      stmt->BindAll(k);
      return stmt->Run();
    });
  }

  testutil::TempDir dir_;
  std::unique_ptr<WriteQueue> writer_;
  std::unique_ptr<ReadPool> pool_;
};

TEST_F(ReadPoolTest, AReaderSeesEveryCommittedWrite) {
  ASSERT_TRUE(Insert(1).ok());
  absl::StatusOr<int64_t> n = pool_->Run<int64_t>(Count);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
}

TEST_F(ReadPoolTest, AnOpenReadNeitherBlocksTheWriterNorSeesItsLaterCommits) {
  ASSERT_TRUE(Insert(1).ok());
  std::promise<void> counted_once, writes_done;
  std::shared_future<void> writes_done_f = writes_done.get_future().share();
  std::future<absl::StatusOr<std::pair<int64_t, int64_t>>> reader =
      std::async(std::launch::async, [&] {
        return pool_->Run<std::pair<int64_t, int64_t>>(
            [&](Connection& db) -> absl::StatusOr<std::pair<int64_t, int64_t>> {
              absl::StatusOr<int64_t> before = Count(db);
              if (!before.ok()) return before.status();
              counted_once.set_value();
              writes_done_f.wait();  // the read transaction stays open meanwhile
              absl::StatusOr<int64_t> after = Count(db);
              if (!after.ok()) return after.status();
              return std::make_pair(*before, *after);
            });
      });
  counted_once.get_future().wait();
  // If the open read blocked the writer, these would wait for busy_timeout and fail.
  for (int k = 2; k <= 50; ++k) ASSERT_TRUE(Insert(k).ok());
  writes_done.set_value();
  absl::StatusOr<std::pair<int64_t, int64_t>> counts = reader.get();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->first, 1);
  EXPECT_EQ(counts->second, 1);  // one snapshot for the whole read
  absl::StatusOr<int64_t> now = pool_->Run<int64_t>(Count);
  EXPECT_EQ(*now, 50);
}

TEST_F(ReadPoolTest, AReaderCannotWrite) {
  absl::Status s = pool_->Run([](Connection& db) { return db.Exec("INSERT INTO t VALUES (9)"); });
  EXPECT_FALSE(s.ok());
}

TEST_F(ReadPoolTest, ACallGivesUpWhenEveryReaderStaysBusy) {
  pool_->set_acquire_timeout(std::chrono::milliseconds(200));
  std::promise<void> both_held, release;
  std::shared_future<void> release_f = release.get_future().share();
  std::atomic<int> holding{0};
  auto hold = [&] {
    return pool_->Run([&](Connection&) {
      if (++holding == 2) both_held.set_value();
      release_f.wait();
      return absl::OkStatus();
    });
  };
  std::future<absl::Status> a = std::async(std::launch::async, hold);
  std::future<absl::Status> b = std::async(std::launch::async, hold);
  both_held.get_future().wait();
  bool ran = false;
  absl::Status third = pool_->Run([&](Connection&) {
    ran = true;
    return absl::OkStatus();
  });
  release.set_value();
  EXPECT_EQ(third.code(), absl::StatusCode::kUnavailable) << third;
  EXPECT_FALSE(ran);
  EXPECT_TRUE(a.get().ok());
  EXPECT_TRUE(b.get().ok());
  EXPECT_TRUE(pool_->Run<int64_t>(Count).ok());  // the readers are free again
}

}  // namespace
}  // namespace onset::db
