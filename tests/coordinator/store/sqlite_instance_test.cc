// A restore on the store: a backup's copy served for the first time starts a new generation,
// hands back the attempts it held open, refuses every call of an earlier generation's attempt,
// claims nothing until the workers of the lost timeline have had their time, and numbers its
// attempts apart from every earlier generation's. A file that is no backup changes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "db/online_backup.h"
#include "tests/coordinator/test_util.h"
#include "tests/testing/temp_dir.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kWaitMs = 5000;

class SqliteInstanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
  }

  ClaimedJob Claim() {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(job.ok() && job->has_value());
    return job.ok() && job->has_value() ? **job : ClaimedJob{};
  }

  // Backs the served file up into copy.db, then serves the copy instead, as docs say to restore.
  void Restore(int64_t mark = 0) {
    ASSERT_TRUE(db::BackupDatabaseFile(dir_.File("onset.db"), dir_.File("copy.db"),
                                       db::BackupFileOptions{{}, 0},
                                       db::BackupStamp{clock_.WallUnixMs(), "a test"})
                    .ok());
    Reopen("copy.db");
    absl::StatusOr<ServingStart> start = store_->StartServing(mark, kWaitMs);
    ASSERT_TRUE(start.ok()) << start.status();
    start_ = *start;
  }

  void Reopen(const std::string& name) {
    store_.reset();
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(dir_.File(name), clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  testutil::TempDir dir_;
  common::FakeClock clock_;
  std::string worker_;
  std::unique_ptr<SqliteStore> store_;
  ServingStart start_;
};

TEST_F(SqliteInstanceTest, ARestoredCopyStartsANewGenerationThatRunsNoCellTwice) {
  const ClaimedJob running = Claim();
  ASSERT_EQ(running.attempt, 1);
  ASSERT_TRUE(store_->RecordProgress(running.lease_id, 512, 1).ok());
  Restore();
  EXPECT_TRUE(start_.restored);
  EXPECT_EQ(start_.handed_back, 1);
  EXPECT_EQ(start_.instance.generation, 2);
  EXPECT_FALSE(start_.instance.backup.has_value());
  EXPECT_EQ(start_.instance.restored_from.source, "a test");
  EXPECT_EQ(start_.instance.claims_from_unix_ms, clock_.WallUnixMs() + kWaitMs);

  // The attempt the copy held open belongs to the lost timeline: its worker is told to stop.
  absl::StatusOr<LeaseStatus> old = store_->RecordProgress(running.lease_id, 1024, 1);
  EXPECT_TRUE(absl::IsFailedPrecondition(old.status())) << old.status();
  EXPECT_THAT(old.status().message(), HasSubstr("stop the job"));
  AttemptEnd succeeded;
  succeeded.outcome = AttemptOutcome::kSucceeded;
  EXPECT_TRUE(absl::IsFailedPrecondition(store_->FinishAttempt(running.lease_id, succeeded)));
  EXPECT_EQ(testing::FindCell(*store_, "small", running.cell_id).state, CellState::kQueued);

  // No claim until the workers of that timeline have stopped.
  absl::StatusOr<std::optional<ClaimedJob>> early = store_->ClaimNextCell(worker_, {"cpu:0"});
  ASSERT_TRUE(early.ok()) << early.status();
  EXPECT_FALSE(early->has_value());
  clock_.Advance(std::chrono::milliseconds(kWaitMs));
  const ClaimedJob again = Claim();
  EXPECT_EQ(again.cell_id, running.cell_id);
  EXPECT_EQ(again.attempt, 1'000'001) << "an attempt number of the lost timeline was reused";
  EXPECT_TRUE(store_->RecordProgress(again.lease_id, 512, 1).ok());
}

TEST_F(SqliteInstanceTest, AStartOnAFileThatIsNoBackupChangesNothing) {
  const ClaimedJob running = Claim();
  absl::StatusOr<ServingStart> start = store_->StartServing(0, kWaitMs);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_FALSE(start->restored);
  EXPECT_EQ(start->instance.generation, 1);
  EXPECT_EQ(start->handed_back, 0);
  EXPECT_TRUE(store_->RecordProgress(running.lease_id, 512, 1).ok());
  EXPECT_EQ(Claim().attempt, 1);  // claims open, numbered as ever
}

TEST_F(SqliteInstanceTest, ARestartDuringTheWaitKeepsTheClaimsClosedAndTheGeneration) {
  Restore();
  Reopen("copy.db");
  absl::StatusOr<ServingStart> again = store_->StartServing(2, kWaitMs);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->restored);
  EXPECT_EQ(again->instance.generation, 2);
  absl::StatusOr<std::optional<ClaimedJob>> early = store_->ClaimNextCell(worker_, {"cpu:0"});
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(early->has_value());
  clock_.Advance(std::chrono::milliseconds(kWaitMs));
  EXPECT_EQ(Claim().attempt, 1'000'001);
}

TEST_F(SqliteInstanceTest, ABackupRestoredTwiceGetsAGenerationOfItsOwnEachTime) {
  // The path was already served at generation 4 (its mark): the copy, of generation 1, becomes 5.
  Restore(/*mark=*/4);
  EXPECT_EQ(start_.instance.generation, 5);
  clock_.Advance(std::chrono::milliseconds(kWaitMs));
  EXPECT_EQ(Claim().attempt, 4'000'001);
}

}  // namespace
}  // namespace onset::coordinator
