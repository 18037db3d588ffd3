// The mirrors' thread: each changed cell synced once per pass however often it changed, a failed
// sync tried again, a bounded number of cells waiting, and what waits synced at Stop.
#include "coordinator/mirror/cell_sync_loop.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/fake_clock.h"
#include "common/mutex.h"

namespace onset::coordinator {
namespace {

class FakeSink : public CellSink {
 public:
  absl::Status Sync(const std::string& study, const std::string& cell_id) override {
    common::MutexLock lock(&mu_);
    ++syncs_[{study, cell_id}];
    if (gone_.count(cell_id)) return absl::NotFoundError("no cell " + cell_id);
    if (refused_.count(cell_id)) return absl::FailedPreconditionError("refused " + cell_id);
    if (failures_left_ > 0) {
      --failures_left_;
      return absl::UnavailableError("disk full");
    }
    return absl::OkStatus();
  }
  int syncs(const std::string& study, const std::string& cell) {
    common::MutexLock lock(&mu_);
    return syncs_[{study, cell}];
  }
  void FailNext(int n) {
    common::MutexLock lock(&mu_);
    failures_left_ = n;
  }
  void Refuse(const std::string& cell) {
    common::MutexLock lock(&mu_);
    refused_.insert(cell);
  }
  void Remove(const std::string& cell) {
    common::MutexLock lock(&mu_);
    gone_.insert(cell);
  }

 private:
  common::Mutex mu_;
  std::map<std::pair<std::string, std::string>, int> syncs_;
  int failures_left_ = 0;
  std::set<std::string> gone_;
  std::set<std::string> refused_;
};

class CellSyncLoopTest : public ::testing::Test {
 protected:
  FakeSink sink_;
  common::FakeClock clock_;
};

TEST_F(CellSyncLoopTest, ACellChangedManyTimesIsSyncedOncePerPass) {
  CellSyncLoop loop("test", &sink_, &clock_, {});
  for (int i = 0; i < 5; ++i) loop.PointsStored("s", "a");
  loop.AttemptEnded("s", "a");
  loop.PointsStored("s", "b");
  loop.PointsStored("t", "a");  // the same id in another study is another cell
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "a"), 1);
  EXPECT_EQ(sink_.syncs("s", "b"), 1);
  EXPECT_EQ(sink_.syncs("t", "a"), 1);
  loop.SyncPending();  // nothing changed since
  EXPECT_EQ(sink_.syncs("s", "a"), 1);
  EXPECT_EQ(loop.stats().synced, 3);
}

TEST_F(CellSyncLoopTest, AFailedSyncIsTriedAgainAtTheNextPass) {
  CellSyncLoop loop("test", &sink_, &clock_, {});
  sink_.FailNext(1);
  loop.PointsStored("s", "a");
  loop.SyncPending();
  EXPECT_EQ(loop.stats().failed, 1);
  EXPECT_EQ(loop.stats().pending, 1);
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "a"), 2);
  EXPECT_EQ(loop.stats().pending, 0);
  EXPECT_EQ(loop.stats().synced, 1);
}

TEST_F(CellSyncLoopTest, AFailureEndsThePassAndTheCellsAfterItWait) {
  CellSyncLoop loop("test", &sink_, &clock_, {});
  sink_.FailNext(1);
  loop.PointsStored("s", "a");
  loop.PointsStored("s", "b");
  loop.PointsStored("s", "c");
  loop.SyncPending();  // a fails; b and c are not tried (a sink that is down fails them all)
  EXPECT_EQ(sink_.syncs("s", "a"), 1);
  EXPECT_EQ(sink_.syncs("s", "b"), 0);
  EXPECT_EQ(loop.stats().pending, 3);
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "b"), 1);
  EXPECT_EQ(sink_.syncs("s", "c"), 1);
  EXPECT_EQ(loop.stats().pending, 0);
}

TEST_F(CellSyncLoopTest, ACellTheSinkRefusesHoldsUpNoOtherAndIsTriedAgain) {
  CellSyncLoop loop("test", &sink_, &clock_, {});
  sink_.Refuse("a");
  loop.PointsStored("s", "a");
  loop.PointsStored("s", "b");
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "b"), 1);  // after "a", synced all the same
  EXPECT_EQ(loop.stats().pending, 1);
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "a"), 2);
  EXPECT_EQ(sink_.syncs("s", "b"), 1);
}

TEST_F(CellSyncLoopTest, ACellThatIsGoneIsDroppedNotRetried) {
  CellSyncLoop loop("test", &sink_, &clock_, {});
  sink_.Remove("a");
  loop.PointsStored("s", "a");
  loop.PointsStored("s", "b");
  loop.SyncPending();
  EXPECT_EQ(loop.stats().gone, 1);
  EXPECT_EQ(loop.stats().pending, 0);
  EXPECT_EQ(sink_.syncs("s", "b"), 1);  // a gone cell ends no pass
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "a"), 1);
}

TEST_F(CellSyncLoopTest, WaitingCellsAreBoundedAndTheRestCounted) {
  CellSyncLoop::Options options;
  options.max_pending = 2;
  CellSyncLoop loop("test", &sink_, &clock_, options);
  loop.PointsStored("s", "a");
  loop.PointsStored("s", "b");
  loop.PointsStored("s", "a");  // already waiting: no more room needed
  loop.PointsStored("s", "c");
  EXPECT_EQ(loop.stats().pending, 2);
  EXPECT_EQ(loop.stats().dropped, 1);
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "c"), 0);
  loop.PointsStored("s", "c");  // its next change brings it back
  loop.SyncPending();
  EXPECT_EQ(sink_.syncs("s", "c"), 1);
}

TEST_F(CellSyncLoopTest, TheThreadSyncsAndStopSyncsWhatWaits) {
  CellSyncLoop::Options options;
  options.interval = std::chrono::hours(1);  // only Stop wakes it
  CellSyncLoop loop("test", &sink_, &clock_, options);
  loop.Start();
  loop.PointsStored("s", "a");
  loop.Stop();
  EXPECT_EQ(sink_.syncs("s", "a"), 1);
  loop.Stop();  // idempotent
}

}  // namespace
}  // namespace onset::coordinator
