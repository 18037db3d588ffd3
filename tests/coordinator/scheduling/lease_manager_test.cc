#include "coordinator/scheduling/lease_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/forwarding_lease_store.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr milliseconds kTtl(10'000);

class LeaseManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir_.File("onset.db"), clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", testing::kSmallStudy);
    ASSERT_TRUE(spec.ok());
    ASSERT_TRUE(store_->AddStudy({spec->name, "", "s.yaml", "", spec->cells}).ok());
    worker_ = store_->RegisterWorker({"h", 1, "v"})->id;
    leases_ = std::make_unique<LeaseManager>(store_.get(), store_.get(), &clock_, kTtl);
  }

  ClaimedJob Lease() {
    absl::StatusOr<std::optional<ClaimedJob>> job = leases_->LeaseJob(worker_, {"cpu:0"});
    EXPECT_TRUE(job.ok() && job->has_value()) << job.status();
    return job.ok() ? job->value_or(ClaimedJob{}) : ClaimedJob{};
  }

  CellInfo Cell(const std::string& id) { return testing::FindCell(*store_, "small", id); }

  testutil::TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<LeaseManager> leases_;
  std::string worker_;
};

TEST_F(LeaseManagerTest, AnUnrenewedLeaseExpiresAndItsCellIsRequeued) {
  ClaimedJob job = Lease();
  clock_.Advance(kTtl);  // exactly at the deadline: still valid
  EXPECT_EQ(leases_->ExpireLeases(), 0);
  clock_.Advance(milliseconds(1));
  EXPECT_EQ(leases_->ExpireLeases(), 1);
  EXPECT_EQ(leases_->ActiveLeases(), 0u);

  CellInfo cell = Cell(job.cell_id);
  EXPECT_EQ(cell.state, CellState::kBackoff);  // retried after the policy's backoff
  EXPECT_THAT(cell.last_error, HasSubstr("lease expired"));

  absl::Status hb = leases_->Heartbeat(worker_, job.lease_id, 100, 1.0).status();
  EXPECT_EQ(hb.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(leases_->FinishJob(worker_, job.lease_id, {}).code(),
            absl::StatusCode::kFailedPrecondition);

  clock_.Advance(RetryPolicy().base_backoff);
  ClaimedJob again = Lease();
  EXPECT_EQ(again.cell_id, job.cell_id);
  EXPECT_EQ(again.attempt, 2);
}

TEST_F(LeaseManagerTest, HeartbeatsRenewTheLease) {
  ClaimedJob job = Lease();
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(kTtl * 8 / 10);
    ASSERT_TRUE(leases_->Heartbeat(worker_, job.lease_id, 1000 * (i + 1), 50.0).ok());
    EXPECT_EQ(leases_->ExpireLeases(), 0);
  }
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kRunning);
  EXPECT_EQ(Cell(job.cell_id).tokens_done, 5000);
}

TEST_F(LeaseManagerTest, AnExpiredLeaseIsRefusedEvenBeforeTheSweeperRuns) {
  ClaimedJob job = Lease();
  clock_.Advance(kTtl + milliseconds(1));
  absl::StatusOr<int> n = leases_->ReportMetrics(worker_, job.lease_id, {{"train/loss", 1, 2.0}});
  EXPECT_EQ(n.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(n.status().message()), HasSubstr(job.cell_id));
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kBackoff);
  EXPECT_EQ(leases_->ExpireLeases(), 0);
}

TEST_F(LeaseManagerTest, UnknownLeaseAndForeignWorkerAreRefused) {
  ClaimedJob job = Lease();
  EXPECT_EQ(leases_->Heartbeat(worker_, "nope", 0, 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  std::string other = store_->RegisterWorker({"h2", 1, "v"})->id;
  EXPECT_EQ(leases_->Heartbeat(other, job.lease_id, 0, 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(leases_->Heartbeat(worker_, job.lease_id, 0, 0).ok());
}

TEST_F(LeaseManagerTest, AnotherWorkerCannotActOnALeaseAndWritesNothing) {
  ClaimedJob job = Lease();
  const std::string other = store_->RegisterWorker({"h2", 1, "v"})->id;
  const AttemptEnd done{AttemptOutcome::kSucceeded, 0, 0, "", ""};

  absl::Status hb = leases_->Heartbeat(other, job.lease_id, 32'000, 9.0).status();
  EXPECT_EQ(hb.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(hb.message(), HasSubstr("held by another worker"));
  EXPECT_THAT(hb.message(), ::testing::Not(HasSubstr(worker_)));  // the holder stays secret
  EXPECT_EQ(
      leases_->ReportMetrics(other, job.lease_id, {{"train/loss", 1000, 1.5}}).status().code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(leases_->FinishJob(other, job.lease_id, done).code(),
            absl::StatusCode::kFailedPrecondition);

  CellInfo cell = Cell(job.cell_id);
  EXPECT_EQ(cell.state, CellState::kRunning);
  EXPECT_EQ(cell.tokens_done, 0);
  EXPECT_FALSE(cell.latest_loss.has_value());
  EXPECT_TRUE((*store_->Results("small"))[0].final_metrics.empty());
  // The holder's lease is untouched.
  EXPECT_EQ(leases_->ActiveLeases(), 1u);
  EXPECT_TRUE(leases_->Heartbeat(worker_, job.lease_id, 100, 1.0).ok());
}

TEST_F(LeaseManagerTest, AStaleLeaseOfARequeuedCellWritesNothing) {
  ClaimedJob first = Lease();
  clock_.Advance(kTtl + milliseconds(1));
  ASSERT_EQ(leases_->ExpireLeases(), 1);
  clock_.Advance(RetryPolicy().base_backoff);
  ClaimedJob second = Lease();  // the same cell, attempt 2, a new lease
  ASSERT_EQ(second.cell_id, first.cell_id);
  ASSERT_NE(second.lease_id, first.lease_id);
  const AttemptEnd done{AttemptOutcome::kSucceeded, 0, 0, "", ""};

  // The old lease, even from the worker that held it, is refused.
  EXPECT_EQ(leases_->Heartbeat(worker_, first.lease_id, 64'000, 9.0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      leases_->ReportMetrics(worker_, first.lease_id, {{"train/loss", 1000, 1.5}}).status().code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(leases_->FinishJob(worker_, first.lease_id, done).code(),
            absl::StatusCode::kFailedPrecondition);

  CellInfo cell = Cell(first.cell_id);
  EXPECT_EQ(cell.state, CellState::kRunning);
  EXPECT_EQ(cell.attempts, 2);
  EXPECT_EQ(cell.tokens_done, 0);
  EXPECT_TRUE((*store_->Results("small"))[0].final_metrics.empty());
  EXPECT_TRUE(leases_->FinishJob(worker_, second.lease_id, done).ok());
  EXPECT_EQ(Cell(first.cell_id).state, CellState::kSucceeded);
}

TEST_F(LeaseManagerTest, FinishReleasesTheLease) {
  ClaimedJob job = Lease();
  ASSERT_EQ(*leases_->ReportMetrics(worker_, job.lease_id, {{"train/loss", 64000, 1.5}}), 1);
  ASSERT_TRUE(
      leases_->FinishJob(worker_, job.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  EXPECT_EQ(leases_->ActiveLeases(), 0u);
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kSucceeded);
  clock_.Advance(kTtl * 2);
  EXPECT_EQ(leases_->ExpireLeases(), 0);
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kSucceeded);
}

// Records what the mirrors are told.
class RecordingObserver : public LeaseObserver {
 public:
  void PointsStored(const std::string& study, const std::string& cell_id) override {
    told.push_back("points " + study + "/" + cell_id);
  }
  void AttemptEnded(const std::string& study, const std::string& cell_id) override {
    told.push_back("ended " + study + "/" + cell_id);
  }
  std::vector<std::string> told;
};

TEST_F(LeaseManagerTest, TheObserverHearsOfStoredPointsAndEndedAttemptsOnly) {
  RecordingObserver observer;
  leases_->set_observer(&observer);
  ClaimedJob job = Lease();
  ASSERT_TRUE(leases_->Heartbeat(worker_, job.lease_id, 10, 1.0).ok());
  ASSERT_TRUE(leases_->ReportMetrics(worker_, job.lease_id, {}).ok());  // no point: not told
  ASSERT_TRUE(leases_->ReportMetrics(worker_, job.lease_id, {{"train/loss", 512, 5.0, 0}}).ok());
  // Refused (another worker): not told.
  EXPECT_FALSE(
      leases_->ReportMetrics("w-other", job.lease_id, {{"train/loss", 1024, 4.0, 0}}).ok());
  ASSERT_TRUE(
      leases_->FinishJob(worker_, job.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  ClaimedJob expiring = Lease();
  clock_.Advance(kTtl + milliseconds(1));
  EXPECT_EQ(leases_->ExpireLeases(), 1);
  EXPECT_EQ(observer.told,
            (std::vector<std::string>{"points small/" + job.cell_id, "ended small/" + job.cell_id,
                                      "ended small/" + expiring.cell_id}));
}

TEST_F(LeaseManagerTest, RecoverGivesRunningAttemptsAFreshDeadline) {
  ClaimedJob job = Lease();
  clock_.Advance(kTtl * 8 / 10);
  // A restarted coordinator: a new manager over the same store.
  LeaseManager restarted(store_.get(), store_.get(), &clock_, kTtl);
  ASSERT_TRUE(restarted.Recover(/*requeue_running=*/false).ok());
  EXPECT_EQ(restarted.ActiveLeases(), 1u);
  clock_.Advance(kTtl * 8 / 10);  // past the old deadline, within the new one
  EXPECT_EQ(restarted.ExpireLeases(), 0);
  EXPECT_TRUE(restarted.Heartbeat(worker_, job.lease_id, 10, 1).ok());
  clock_.Advance(kTtl + milliseconds(1));
  EXPECT_EQ(restarted.ExpireLeases(), 1);
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kBackoff);
}

TEST_F(LeaseManagerTest, RecoverCanRequeueAtOnce) {
  ClaimedJob job = Lease();
  LeaseManager restarted(store_.get(), store_.get(), &clock_, kTtl);
  ASSERT_TRUE(restarted.Recover(/*requeue_running=*/true).ok());
  EXPECT_EQ(restarted.ActiveLeases(), 0u);
  CellInfo cell = Cell(job.cell_id);
  EXPECT_EQ(cell.state, CellState::kQueued);
  EXPECT_THAT(cell.last_error, HasSubstr("restarted"));
  EXPECT_EQ(restarted.Heartbeat(worker_, job.lease_id, 0, 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A store whose writes of one kind wait for a gate to open: a slow write (a large cancel, a
// full disk) as seen by the lease manager.
class GatedStore : public testing::ForwardingLeaseStore {
 public:
  using ForwardingLeaseStore::ForwardingLeaseStore;
  enum class Gate { kNone, kClaim, kFinish, kRequeue };

  void Close(Gate gate) { gate_ = gate; }
  void Open() { opened_.set_value(); }
  // Resolves once a call has reached the closed gate.
  std::shared_future<void> reached() { return reached_future_; }

  absl::StatusOr<std::optional<ClaimedJob>> ClaimNextCell(
      const std::string& worker_id, const std::vector<std::string>& free) override {
    Wait(Gate::kClaim);
    return inner_->ClaimNextCell(worker_id, free);
  }
  absl::Status FinishAttempt(const std::string& lease_id, const AttemptEnd& end) override {
    Wait(Gate::kFinish);
    return inner_->FinishAttempt(lease_id, end);
  }
  absl::Status ExpireAttempt(const std::string& lease_id, const std::string& reason,
                             int64_t stop_margin_ms) override {
    Wait(Gate::kRequeue);
    return inner_->ExpireAttempt(lease_id, reason, stop_margin_ms);
  }

 private:
  void Wait(Gate gate) {
    if (gate_ != gate) return;
    gate_ = Gate::kNone;
    reached_.set_value();
    opened_future_.wait();
  }

  std::atomic<Gate> gate_{Gate::kNone};
  std::promise<void> reached_;
  std::shared_future<void> reached_future_ = reached_.get_future().share();
  std::promise<void> opened_;
  std::shared_future<void> opened_future_ = opened_.get_future().share();
};

// While one store write of each kind the manager makes is held up, another worker's heartbeat
// goes through: the manager holds no lock across a store call.
TEST_F(LeaseManagerTest, AHeldUpStoreWriteDoesNotStallOtherWorkersHeartbeats) {
  for (GatedStore::Gate gate :
       {GatedStore::Gate::kClaim, GatedStore::Gate::kFinish, GatedStore::Gate::kRequeue}) {
    SCOPED_TRACE(static_cast<int>(gate));
    testutil::TempDir dir;
    common::FakeClock clock;
    std::unique_ptr<SqliteStore> real = *SqliteStore::Open(dir.File("onset.db"), clock);
    absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", testing::kSmallStudy);
    ASSERT_TRUE(spec.ok());
    ASSERT_TRUE(real->AddStudy({spec->name, "", "s.yaml", "", spec->cells}).ok());
    GatedStore store(real.get());
    LeaseManager leases(&store, real.get(), &clock, kTtl);
    const std::string a = real->RegisterWorker({"a", 1, "v"})->id;
    const std::string b = real->RegisterWorker({"b", 1, "v"})->id;
    absl::StatusOr<std::optional<ClaimedJob>> held = leases.LeaseJob(a, {"cpu:0"});
    ASSERT_TRUE(held.ok() && held->has_value());
    absl::StatusOr<std::optional<ClaimedJob>> other = leases.LeaseJob(b, {"cpu:0"});
    ASSERT_TRUE(other.ok() && other->has_value());
    const std::string lease_a = (*held)->lease_id;

    store.Close(gate);
    std::future<void> slow = std::async(std::launch::async, [&] {
      if (gate == GatedStore::Gate::kClaim) {
        (void)leases.LeaseJob(a, {"cpu:0"});
      } else if (gate == GatedStore::Gate::kFinish) {
        (void)leases.FinishJob(a, lease_a, {AttemptOutcome::kSucceeded, 0, 0, "", ""});
      } else {
        clock.Advance(kTtl / 2);
        (void)leases.Heartbeat(b, (*other)->lease_id, 1, 1.0);  // b stays current
        clock.Advance(kTtl / 2 + milliseconds(1));
        (void)leases.ExpireLeases();  // a's lease expires and its requeue is held up
      }
    });
    ASSERT_EQ(store.reached().wait_for(std::chrono::seconds(30)), std::future_status::ready);
    std::future<absl::Status> beat = std::async(std::launch::async, [&] {
      return leases.Heartbeat(b, (*other)->lease_id, 2, 1.0).status();
    });
    const bool beat_went_through =
        beat.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    store.Open();
    slow.get();
    EXPECT_TRUE(beat_went_through) << "a heartbeat waited for another worker's store write";
    EXPECT_TRUE(beat.get().ok());
  }
}

// A lease whose expiry could not be written stays known and past its deadline, so the next
// sweep expires it; meanwhile its holder is refused.
TEST_F(LeaseManagerTest, AnExpiryTheStoreRefusedIsRetriedByTheNextSweep) {
  class FailingOnce : public testing::ForwardingLeaseStore {
   public:
    using ForwardingLeaseStore::ForwardingLeaseStore;
    absl::Status ExpireAttempt(const std::string& lease_id, const std::string& reason,
                               int64_t stop_margin_ms) override {
      if (fail_) {
        fail_ = false;
        return absl::UnavailableError("disk full");
      }
      return inner_->ExpireAttempt(lease_id, reason, stop_margin_ms);
    }
    bool fail_ = true;
  } store(store_.get());
  LeaseManager leases(&store, store_.get(), &clock_, kTtl);
  absl::StatusOr<std::optional<ClaimedJob>> job = leases.LeaseJob(worker_, {"cpu:0"});
  ASSERT_TRUE(job.ok() && job->has_value());
  clock_.Advance(kTtl + milliseconds(1));
  EXPECT_EQ(leases.ExpireLeases(), 0);
  EXPECT_EQ(leases.ActiveLeases(), 1u);
  EXPECT_EQ(Cell((*job)->cell_id).state, CellState::kRunning);
  EXPECT_EQ(leases.ExpireLeases(), 1);
  EXPECT_EQ(leases.ActiveLeases(), 0u);
  EXPECT_EQ(Cell((*job)->cell_id).state, CellState::kBackoff);
}

}  // namespace
}  // namespace onset::coordinator
