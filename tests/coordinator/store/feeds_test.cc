// WatchStudy and ReadLogsWaiting against a real store.
#include "coordinator/store/feeds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <thread>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using testutil::TempDir;

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
  }

  ClaimedJob Claim() { return **store_->ClaimNextCell(worker_, {"cpu:0"}); }

  // Watches until `enough` says so (checked after each message); returns every message.
  std::vector<WatchUpdate> Watch(int64_t after_seq,
                                 const std::function<bool(const std::vector<WatchUpdate>&)>& enough,
                                 absl::Status* status = nullptr) {
    std::vector<WatchUpdate> got;
    FeedOptions fast;
    fast.poll_ms = 20;
    fast.min_interval_ms = 0;
    absl::Status s = WatchStudy(
        *store_, *store_, "small", after_seq,
        [&](const WatchUpdate& u) {
          got.push_back(u);
          return !enough(got);
        },
        [] { return false; }, fast);
    if (status) *status = s;
    EXPECT_TRUE(s.ok() || status) << s;
    return got;
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::string worker_;
};

TEST_F(WatchTest, AFreshWatchStartsWithASnapshotThenStreamsChanges) {
  // The changes are made once the snapshot has been sent, so that they must come as events.
  std::promise<void> snapshot_sent;
  std::future<std::vector<WatchUpdate>> watched = std::async(std::launch::async, [&] {
    return Watch(0, [&](const std::vector<WatchUpdate>& got) {
      if (got.size() == 1) snapshot_sent.set_value();
      for (const WatchUpdate& u : got) {
        for (const CellEvent& e : u.events) {
          if (e.to == CellState::kSucceeded) return true;
        }
      }
      return false;
    });
  });
  ASSERT_EQ(snapshot_sent.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->RecordProgress(job.lease_id, 1000, 50.0).ok());
  ASSERT_TRUE(store_->FinishAttempt(job.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  std::vector<WatchUpdate> got = watched.get();
  ASSERT_FALSE(got.empty());
  ASSERT_TRUE(got[0].snapshot.has_value());
  EXPECT_EQ(got[0].snapshot->cells.size(), 6u);
  std::vector<std::string> transitions;
  int64_t previous_seq = got[0].last_seq;
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_FALSE(got[i].snapshot.has_value());
    for (const CellEvent& e : got[i].events) {
      EXPECT_GT(e.seq, previous_seq);  // in order, none twice
      previous_seq = e.seq;
      transitions.push_back(std::string(CellStateName(*e.from)) + ">" + CellStateName(e.to));
    }
  }
  EXPECT_THAT(transitions, ::testing::ElementsAre("queued>running", "running>succeeded"));
}

TEST_F(WatchTest, AResumedWatchGetsExactlyWhatItMissedAndTheCurrentProgress) {
  absl::StatusOr<StudySnapshot> before = store_->SnapshotStudy("small");
  ASSERT_TRUE(before.ok());
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->RecordProgress(job.lease_id, 4096, 100.0).ok());
  std::vector<WatchUpdate> got =
      Watch(before->last_seq, [](const std::vector<WatchUpdate>&) { return true; });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].snapshot.has_value());
  ASSERT_EQ(got[0].events.size(), 1u);
  EXPECT_EQ(got[0].events[0].to, CellState::kRunning);
  EXPECT_EQ(got[0].last_seq, got[0].events[0].seq);
  bool saw_progress = false;
  for (const CellInfo& c : got[0].progress) {
    if (c.id == job.cell_id) saw_progress = c.tokens_done == 4096;
  }
  EXPECT_TRUE(saw_progress);
}

TEST_F(WatchTest, ABigSnapshotComesInPiecesThatTogetherHoldEveryCellOnce) {
  std::vector<WatchUpdate> got;
  FeedOptions options;
  options.snapshot_cells = 4;  // the small study has 6 cells: 4 + 2
  ASSERT_TRUE(WatchStudy(
                  *store_, *store_, "small", 0,
                  [&](const WatchUpdate& u) {
                    got.push_back(u);
                    return u.snapshot_more;
                  },
                  [] { return false; }, options)
                  .ok());
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got[0].snapshot && got[1].snapshot);
  EXPECT_TRUE(got[0].snapshot_more);
  EXPECT_FALSE(got[1].snapshot_more);
  EXPECT_EQ(got[0].snapshot->cells.size(), 4u);
  EXPECT_EQ(got[1].snapshot->cells.size(), 2u);
  EXPECT_EQ(got[0].last_seq, got[1].last_seq);
  std::vector<std::string> ids;
  for (const WatchUpdate& u : got) {
    EXPECT_EQ(u.snapshot->study.cells_total, 6);
    for (const CellInfo& c : u.snapshot->cells) ids.push_back(c.id);
  }
  std::vector<std::string> expected;
  absl::StatusOr<StudyDetail> stored = store_->GetStudy("small");
  ASSERT_TRUE(stored.ok());
  for (const CellInfo& c : stored->cells) expected.push_back(c.id);
  EXPECT_EQ(ids, expected);  // queue order, each once
}

TEST_F(WatchTest, ProgressComesInBoundedPieces) {
  // Three running cells with progress, at most two progress entries a message.
  std::vector<std::string> running;
  for (int i = 0; i < 3; ++i) {
    ClaimedJob job = Claim();
    ASSERT_TRUE(store_->RecordProgress(job.lease_id, 1000 + i, 1.0).ok());
    running.push_back(job.cell_id);
  }
  // Resumed after the latest event: the watcher is owed every running cell's progress.
  absl::StatusOr<StudySnapshot> now = store_->SnapshotStudy("small");
  ASSERT_TRUE(now.ok());
  std::vector<WatchUpdate> got;
  FeedOptions options;
  options.poll_ms = 20;
  options.min_interval_ms = 0;
  options.max_progress = 2;
  std::set<std::string> seen;
  ASSERT_TRUE(WatchStudy(
                  *store_, *store_, "small", now->last_seq,
                  [&](const WatchUpdate& u) {
                    got.push_back(u);
                    for (const CellInfo& c : u.progress) seen.insert(c.id);
                    return seen.size() < 3;
                  },
                  [] { return false; }, options)
                  .ok());
  for (const WatchUpdate& u : got) EXPECT_LE(u.progress.size(), 2u);
  EXPECT_EQ(seen, std::set<std::string>(running.begin(), running.end()));
}

TEST_F(WatchTest, UnknownStudyAndAFutureSeqAreRefused) {
  FeedOptions fast;
  absl::Status unknown = WatchStudy(
      *store_, *store_, "nope", 0, [](const WatchUpdate&) { return true; }, [] { return false; },
      fast);
  EXPECT_TRUE(absl::IsNotFound(unknown)) << unknown;
  absl::Status ahead;
  Watch(
      1'000'000, [](const std::vector<WatchUpdate>&) { return true; }, &ahead);
  EXPECT_TRUE(absl::IsOutOfRange(ahead)) << ahead;
}

TEST_F(WatchTest, StopsWhenAskedEvenWithNothingHappening) {
  std::atomic<bool> stop{false};
  FeedOptions fast;
  fast.poll_ms = 10;
  std::future<absl::Status> watching = std::async(std::launch::async, [&] {
    return WatchStudy(
        *store_, *store_, "small", 0, [](const WatchUpdate&) { return true; },
        [&] { return stop.load(); }, fast);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  ASSERT_EQ(watching.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(watching.get().ok());
}

TEST_F(WatchTest, ALongPollReturnsAsSoonAsALineArrives) {
  ClaimedJob job = Claim();
  LogQuery query;
  query.cell = job.cell_id;
  std::future<absl::StatusOr<LogChunk>> reading = std::async(std::launch::async, [&] {
    return ReadLogsWaiting(*store_, *store_, query, 30'000, [] { return false; });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, {{1, 0, "hello"}}).ok());
  ASSERT_EQ(reading.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  absl::StatusOr<LogChunk> chunk = reading.get();
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  ASSERT_EQ(chunk->lines.size(), 1u);
  EXPECT_EQ(chunk->lines[0].text, "hello");

  // An ended attempt of a finished cell returns at once, with nothing to wait for.
  ASSERT_TRUE(store_->FinishAttempt(job.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  query.after_line = 1;
  const auto start = std::chrono::steady_clock::now();
  chunk = ReadLogsWaiting(*store_, *store_, query, 30'000, [] { return false; });
  ASSERT_TRUE(chunk.ok());
  EXPECT_TRUE(chunk->ended);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace onset::coordinator
