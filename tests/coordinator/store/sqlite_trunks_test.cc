// WSD trunks and branches in the store (coordinator/store/sqlite_trunks.h and the SqliteStore paths
// that use it): storing them, when a branch may be claimed, how a trunk ends and what its end
// does to the branches still waiting, and what reads leave trunks out of.
#include "coordinator/store/sqlite_trunks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testutil::TempDir;

constexpr char kStudy[] = "wsd";
constexpr char kTrunk[] = "7000000000000000000000000000000000000000000000000000000000000001";
constexpr char kBranch1[] = "b100000000000000000000000000000000000000000000000000000000000001";
constexpr char kBranch2[] = "b200000000000000000000000000000000000000000000000000000000000002";
constexpr char kAlone[] = "c000000000000000000000000000000000000000000000000000000000000003";

CellSpec Spec(const std::string& id, const std::string& tokens, int64_t budget) {
  CellSpec cell;
  cell.id = id;
  cell.axes = {{"arch", "full"}, {"tokens", tokens}, {"seed", "0"}};
  cell.config_json = R"({"cell":")" + id + R"("})";
  cell.tokens_budget = budget;
  cell.non_embedding_params = 1000;
  cell.train_flops_per_token = 6000;
  return cell;
}

CellSpec Trunk(int64_t until) {
  CellSpec cell = Spec(kTrunk, std::to_string(until), until);
  cell.config_json = R"({"trunk":{"until":)" + std::to_string(until) + "}}";
  cell.role = CellRole::kTrunk;
  return cell;
}

CellSpec Branch(const std::string& id, int64_t branch_tokens, int64_t budget) {
  CellSpec cell = Spec(id, std::to_string(budget), budget);
  cell.role = CellRole::kBranch;
  cell.trunk_id = kTrunk;
  cell.branch_tokens = branch_tokens;
  return cell;
}

// The first branch before its trunk (a trunk stored later in the same submission), the second
// after it, then a cell that runs alone: queue order B1, T, B2, C.
NewStudy WsdStudy(int64_t until = 200) {
  return NewStudy{kStudy,
                  "",
                  "wsd.yaml",
                  "name: wsd",
                  {Branch(kBranch1, 100, 125), Trunk(until), Branch(kBranch2, 200, 250),
                   Spec(kAlone, "300", 300)}};
}

class SqliteTrunksTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(RetryPolicy()); }

  void Open(RetryPolicy policy) {
    store_.reset();
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir_.File("onset.db"), clock_, policy);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    absl::StatusOr<std::string> worker = testing::WorkerId(store_->RegisterWorker({"h", 4, "v"}));
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *worker;
  }

  void Add(const NewStudy& study = WsdStudy()) {
    absl::StatusOr<AddStudyResult> added = store_->AddStudy(study);
    ASSERT_TRUE(added.ok()) << added.status();
  }

  std::optional<ClaimedJob> Claim() {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : std::nullopt;
  }

  // Claims until the trunk comes (ready branches ahead of it in the queue come first).
  ClaimedJob ClaimTrunkBehindReadyBranches() {
    while (std::optional<ClaimedJob> job = Claim()) {
      if (job->cell_id == kTrunk) return *job;
    }
    ADD_FAILURE() << "the trunk was not claimable";
    return ClaimedJob{};
  }

  ClaimedJob ClaimTrunk() {
    std::optional<ClaimedJob> job = Claim();
    EXPECT_TRUE(job.has_value());
    EXPECT_EQ(job ? job->cell_id : "", kTrunk);
    return job.value_or(ClaimedJob{});
  }

  void Checkpoint(const ClaimedJob& job, int64_t tokens) {
    ASSERT_TRUE(store_->AddMetrics(job.lease_id, {{"checkpoint/bytes", tokens, 1e6}}).ok());
  }

  void Finish(const ClaimedJob& job, AttemptOutcome outcome, const std::string& reason = "") {
    AttemptEnd end;
    end.outcome = outcome;
    if (outcome == AttemptOutcome::kFailed) end.exit_code = 1;
    end.reason = reason;
    ASSERT_TRUE(store_->FinishAttempt(job.lease_id, end).ok());
  }

  CellInfo Cell(const std::string& id) { return testing::FindCell(*store_, kStudy, id); }

  // The reason of the cell's latest state change.
  std::string LastEventReason(const std::string& id) {
    absl::StatusOr<std::vector<CellEvent>> events = store_->StudyEvents(kStudy, 0, 1000);
    EXPECT_TRUE(events.ok()) << events.status();
    std::string reason = "(no event)";
    for (const CellEvent& e : *events) {
      if (e.cell_id == id) reason = e.reason;
    }
    return reason;
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::string worker_;
};

TEST(TrunkTextsTest, NotesAndReasonsSayWhatEnded) {
  EXPECT_EQ(trunks::TrunkEndedNote("abc", CellState::kFailed, "exit code 1"),
            "trunk abc failed: exit code 1");
  EXPECT_EQ(trunks::TrunkEndedNote("abc", CellState::kCancelled, ""), "trunk abc cancelled");
  EXPECT_EQ(life::TrunkMissingCheckpointReason(200),
            "trunk ended without its checkpoint at 200 tokens");
}

TEST_F(SqliteTrunksTest, TrunksAndBranchesAreStoredWithTheirRolesAndCountOnlyAsJobs) {
  absl::StatusOr<AddStudyResult> added = store_->AddStudy(WsdStudy());
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->cells_added, 4);
  ASSERT_EQ(added->cells.size(), 4u);
  const CellInfo& b1 = added->cells[0];
  EXPECT_EQ(b1.role, CellRole::kBranch);
  EXPECT_EQ(b1.trunk_id, kTrunk);
  EXPECT_EQ(b1.branch_tokens, 100);
  EXPECT_TRUE(b1.waiting_for_trunk);
  EXPECT_EQ(added->cells[1].role, CellRole::kTrunk);
  EXPECT_EQ(added->cells[1].trunk_id, "");
  EXPECT_FALSE(added->cells[1].waiting_for_trunk);
  EXPECT_EQ(added->cells[2].trunk_id, kTrunk);
  EXPECT_EQ(added->cells[3].role, CellRole::kCell);
  EXPECT_FALSE(added->cells[3].waiting_for_trunk);
  // The trunk is a job, not a grid point: not counted, but shown with the cells.
  EXPECT_EQ(added->study.cells_total, 3);
  EXPECT_EQ(added->study.cells_by_state.at("queued"), 3);
  absl::StatusOr<StudyDetail> detail = store_->GetStudy(kStudy);
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(detail->cells.size(), 4u);
  absl::StatusOr<StudySnapshot> snapshot = store_->SnapshotStudy(kStudy);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->detail.cells.size(), 4u);
  EXPECT_EQ(snapshot->detail.study.cells_total, 3);
  absl::StatusOr<std::vector<CellInfo>> found = store_->FindCells(kStudy, {false, {kBranch2}});
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found->front().role, CellRole::kBranch);
  EXPECT_EQ(found->front().branch_tokens, 200);

  absl::StatusOr<std::vector<StoredPlanCell>> plan = store_->PlanCells(kStudy);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ((*plan)[0].role, CellRole::kBranch);
  EXPECT_EQ((*plan)[0].trunk_id, kTrunk);
  EXPECT_EQ((*plan)[0].branch_tokens, 100);
  EXPECT_EQ((*plan)[0].config_json, "");
  EXPECT_EQ((*plan)[1].role, CellRole::kTrunk);
  EXPECT_EQ((*plan)[1].config_json, Trunk(200).config_json);
  EXPECT_EQ((*plan)[1].tokens_budget, 200);
  EXPECT_EQ((*plan)[3].role, CellRole::kCell);
  absl::StatusOr<std::vector<StoredPlanCell>> none = store_->PlanCells("nope");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // The same submission again adds nothing; the trunk's axes are no grid point to compare.
  absl::StatusOr<AddStudyResult> again = store_->AddStudy(WsdStudy());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cells_added, 0);
}

TEST_F(SqliteTrunksTest, AStoredCellKeepsItsRole) {
  NewStudy alone = WsdStudy();
  alone.cells = {Spec(kBranch1, "125", 125)};
  Add(alone);
  Add();
  EXPECT_EQ(Cell(kBranch1).role, CellRole::kCell);
  EXPECT_EQ(Cell(kBranch1).trunk_id, "");
  EXPECT_EQ(Cell(kBranch2).role, CellRole::kBranch);
}

TEST_F(SqliteTrunksTest, ABranchOfATrunkTheStudyDoesNotHaveIsRefusedAndNothingWritten) {
  NewStudy study = WsdStudy();
  study.cells.erase(study.cells.begin() + 1);  // no trunk
  absl::StatusOr<AddStudyResult> refused = store_->AddStudy(study);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("is a branch of trunk " + std::string(kTrunk)));
  EXPECT_EQ(store_->GetStudy(kStudy).status().code(), absl::StatusCode::kNotFound);
  study.cells[0].trunk_id = "";
  EXPECT_EQ(store_->AddStudy(study).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SqliteTrunksTest, ABranchIsClaimableOnlyOnceItsTrunkReportedItsCheckpoint) {
  Add();
  // B1 comes first in the queue but waits: the trunk is claimed, then the cell alone.
  ClaimedJob trunk = ClaimTrunk();
  EXPECT_EQ(trunk.role, CellRole::kTrunk);
  EXPECT_EQ(trunk.tokens_budget, 200);
  std::optional<ClaimedJob> alone = Claim();
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(alone->cell_id, kAlone);
  EXPECT_EQ(alone->role, CellRole::kCell);
  EXPECT_FALSE(Claim().has_value());

  // Another checkpoint, or another metric at the branch point, does not make it ready.
  Checkpoint(trunk, 50);
  ASSERT_TRUE(store_->AddMetrics(trunk.lease_id, {{"train/loss", 100, 3.0}}).ok());
  EXPECT_FALSE(Claim().has_value());
  EXPECT_TRUE(Cell(kBranch1).waiting_for_trunk);

  Checkpoint(trunk, 100);
  EXPECT_FALSE(Cell(kBranch1).waiting_for_trunk);
  EXPECT_TRUE(Cell(kBranch2).waiting_for_trunk);
  std::optional<ClaimedJob> b1 = Claim();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->cell_id, kBranch1);
  EXPECT_EQ(b1->role, CellRole::kBranch);
  EXPECT_EQ(b1->trunk_id, kTrunk);
  EXPECT_EQ(b1->branch_tokens, 100);
  EXPECT_EQ(b1->tokens_budget, 125);
  EXPECT_FALSE(Claim().has_value());

  Checkpoint(trunk, 200);
  Finish(trunk, AttemptOutcome::kSucceeded);
  EXPECT_EQ(Cell(kTrunk).state, CellState::kSucceeded);
  std::optional<ClaimedJob> b2 = Claim();
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(b2->cell_id, kBranch2);
  EXPECT_EQ(b2->branch_tokens, 200);
}

TEST_F(SqliteTrunksTest, ATrunkSucceedingWithoutItsLastCheckpointFailsUnderThePolicy) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  ASSERT_TRUE(store_->RecordProgress(trunk.lease_id, 200, 1.0).ok());
  Checkpoint(trunk, 100);
  Finish(trunk, AttemptOutcome::kSucceeded);
  CellInfo info = Cell(kTrunk);
  EXPECT_EQ(info.state, CellState::kBackoff);  // a crash: retried
  EXPECT_EQ(info.failures, 1);
  EXPECT_EQ(info.last_error, "trunk ended without its checkpoint at 200 tokens");
  // Its branches wait on (B1's checkpoint exists: it runs).
  EXPECT_EQ(Cell(kBranch2).state, CellState::kQueued);
  std::optional<ClaimedJob> b1 = Claim();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->cell_id, kBranch1);
}

TEST_F(SqliteTrunksTest, ATrunkExtendedWhileItRanIsQueuedAgainNotFailed) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  // A larger budget arrives while it runs.
  NewStudy extended = WsdStudy(300);
  extended.cells.push_back(Branch("b3", 300, 400));
  Add(extended);
  EXPECT_EQ(Cell(kTrunk).state, CellState::kRunning);
  EXPECT_EQ(Cell(kTrunk).tokens_budget, 300);
  ASSERT_TRUE(store_->RecordProgress(trunk.lease_id, 200, 1.0).ok());
  Checkpoint(trunk, 100);
  Checkpoint(trunk, 200);
  Finish(trunk, AttemptOutcome::kSucceeded);
  CellInfo info = Cell(kTrunk);
  EXPECT_EQ(info.state, CellState::kQueued);
  EXPECT_EQ(info.failures, 0);
  EXPECT_EQ(info.last_error, "");
  // It resumes: the next attempt carries the extended spec.
  ClaimedJob again = ClaimTrunkBehindReadyBranches();
  EXPECT_EQ(again.attempt, 2);
  EXPECT_EQ(again.tokens_budget, 300);
  EXPECT_EQ(again.config_json, Trunk(300).config_json);
}

TEST_F(SqliteTrunksTest, ExtendingASucceededTrunkQueuesItAgainAndASmallerBudgetChangesNothing) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  Checkpoint(trunk, 100);
  Checkpoint(trunk, 200);
  Finish(trunk, AttemptOutcome::kSucceeded);
  ASSERT_EQ(Cell(kTrunk).state, CellState::kSucceeded);

  Add(WsdStudy(150));  // a smaller budget: left as it is
  EXPECT_EQ(Cell(kTrunk).state, CellState::kSucceeded);
  EXPECT_EQ(Cell(kTrunk).tokens_budget, 200);
  absl::StatusOr<AddStudyResult> preview = store_->PreviewStudy(WsdStudy(300));
  ASSERT_TRUE(preview.ok()) << preview.status();
  EXPECT_EQ(preview->cells[1].state, CellState::kQueued);
  EXPECT_EQ(preview->cells[1].tokens_budget, 300);
  EXPECT_EQ(Cell(kTrunk).state, CellState::kSucceeded);  // a preview writes nothing

  NewStudy extended = WsdStudy(300);
  extended.cells.push_back(Branch("b3", 300, 400));
  absl::StatusOr<AddStudyResult> added = store_->AddStudy(extended);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_THAT(added->new_cell_ids, ElementsAre("b3"));
  CellInfo info = Cell(kTrunk);
  EXPECT_EQ(info.state, CellState::kQueued);
  EXPECT_EQ(info.tokens_budget, 300);
  EXPECT_EQ(info.axes.at("tokens"), "300");
  EXPECT_EQ(Cell("b3").trunk_id, kTrunk);
  EXPECT_TRUE(Cell("b3").waiting_for_trunk);
  ClaimedJob resumed = ClaimTrunkBehindReadyBranches();
  EXPECT_EQ(resumed.config_json, Trunk(300).config_json);
  EXPECT_FALSE(resumed.fresh);
}

TEST_F(SqliteTrunksTest, ATrunkFailingForGoodEndsItsWaitingBranchesAndRerunQueuesThem) {
  RetryPolicy once;
  once.max_failures = 1;
  Open(once);
  Add();
  ClaimedJob trunk = ClaimTrunk();
  Checkpoint(trunk, 100);  // B1 may run; B2 waits
  Finish(trunk, AttemptOutcome::kFailed, "exit code 1");
  EXPECT_EQ(Cell(kTrunk).state, CellState::kFailed);
  const std::string note = "trunk " + std::string(kTrunk) + " failed: exit code 1";
  CellInfo b2 = Cell(kBranch2);
  EXPECT_EQ(b2.state, CellState::kFailed);
  EXPECT_EQ(b2.last_error, note);
  EXPECT_EQ(b2.attempts, 0);
  EXPECT_FALSE(b2.waiting_for_trunk);
  EXPECT_EQ(LastEventReason(kBranch2), note);
  EXPECT_EQ(Cell(kBranch1).state, CellState::kQueued);
  EXPECT_EQ(Cell(kAlone).state, CellState::kQueued);

  // Queued again, it waits for its trunk again, without the old note; and the trunk, which
  // ended without B2's checkpoint, is queued again with it, so that B2 does not wait for ever.
  absl::StatusOr<int> rerun = store_->RerunCells({kStudy, {}, {}, {kBranch2}, false});
  ASSERT_TRUE(rerun.ok()) << rerun.status();
  EXPECT_EQ(*rerun, 1);
  b2 = Cell(kBranch2);
  EXPECT_EQ(b2.state, CellState::kQueued);
  EXPECT_EQ(b2.last_error, "");
  EXPECT_TRUE(b2.waiting_for_trunk);
  EXPECT_EQ(LastEventReason(kBranch2), "");
  EXPECT_EQ(Cell(kTrunk).state, CellState::kQueued);
  EXPECT_EQ(Cell(kTrunk).failures, 0);
  std::set<std::string> claimed;
  while (std::optional<ClaimedJob> job = Claim()) claimed.insert(job->cell_id);
  EXPECT_EQ(claimed, (std::set<std::string>{kBranch1, kAlone, kTrunk}));
}

// Cancel a trunk, then `onset rerun --state failed`: its branches come back, and so does the
// trunk they need; a branch whose checkpoint exists does not bring back its trunk.
TEST_F(SqliteTrunksTest, RerunningTheBranchesOfACancelledTrunkQueuesTheTrunkToo) {
  Add();
  ASSERT_TRUE(store_->CancelCells(kStudy, {kTrunk}).ok());
  ASSERT_EQ(Cell(kBranch1).state, CellState::kFailed);
  absl::StatusOr<int> rerun = store_->RerunCells({kStudy, {CellState::kFailed}, {}, {}, false});
  ASSERT_TRUE(rerun.ok()) << rerun.status();
  EXPECT_EQ(*rerun, 2);
  EXPECT_EQ(Cell(kTrunk).state, CellState::kQueued);
  for (const char* branch : {kBranch1, kBranch2}) {
    EXPECT_EQ(Cell(branch).state, CellState::kQueued);
    EXPECT_TRUE(Cell(branch).waiting_for_trunk);
  }
  ClaimedJob trunk = ClaimTrunkBehindReadyBranches();
  EXPECT_EQ(trunk.cell_id, kTrunk);
  Checkpoint(trunk, 100);
  Checkpoint(trunk, 200);
  Finish(trunk, AttemptOutcome::kSucceeded);
  std::set<std::string> claimed;
  while (std::optional<ClaimedJob> job = Claim()) claimed.insert(job->cell_id);
  EXPECT_EQ(claimed, (std::set<std::string>{kBranch1, kBranch2, kAlone}));
}

TEST_F(SqliteTrunksTest, ALostTrunkOutOfRetriesEndsItsWaitingBranches) {
  RetryPolicy once;
  once.max_failures = 1;
  Open(once);
  Add();
  ClaimedJob trunk = ClaimTrunk();
  ASSERT_TRUE(store_->RecordProgress(trunk.lease_id, 10, 1).ok());  // its worker had it
  ASSERT_TRUE(store_->ExpireAttempt(trunk.lease_id, "lease expired", 0).ok());
  EXPECT_EQ(Cell(kTrunk).state, CellState::kFailed);
  EXPECT_EQ(Cell(kBranch1).state, CellState::kFailed);
  EXPECT_EQ(Cell(kBranch1).last_error, "trunk " + std::string(kTrunk) + " failed: lease expired");
  EXPECT_EQ(Cell(kBranch2).state, CellState::kFailed);
}

// A worker that finds nothing to claim still has work coming: branches waiting for their trunk's
// checkpoint, and the trunk waiting out its backoff.
TEST_F(SqliteTrunksTest, BranchesWaitingForTheirTrunkAndABackoffAreWaitingCells) {
  Add();
  auto waiting = [&] {
    absl::StatusOr<int> n = store_->CountWaitingCells(worker_);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.value_or(-1);
  };
  EXPECT_EQ(waiting(), 4);
  ClaimedJob trunk = ClaimTrunk();
  std::optional<ClaimedJob> alone = Claim();
  ASSERT_TRUE(alone.has_value());
  Finish(*alone, AttemptOutcome::kSucceeded);
  EXPECT_FALSE(Claim().has_value());
  EXPECT_EQ(waiting(), 2);  // the branches

  Finish(trunk, AttemptOutcome::kFailed, "exit code 1");
  ASSERT_EQ(Cell(kTrunk).state, CellState::kBackoff);
  EXPECT_FALSE(Claim().has_value());
  EXPECT_EQ(waiting(), 3);
}

TEST_F(SqliteTrunksTest, ATrunkRetryingLeavesItsBranchesWaiting) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  Finish(trunk, AttemptOutcome::kFailed, "exit code 1");
  EXPECT_EQ(Cell(kTrunk).state, CellState::kBackoff);
  EXPECT_EQ(Cell(kBranch1).state, CellState::kQueued);
  EXPECT_EQ(Cell(kBranch2).state, CellState::kQueued);
}

TEST_F(SqliteTrunksTest, ADivergedTrunkEndsItsWaitingBranchesDiverged) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  Checkpoint(trunk, 100);
  Finish(trunk, AttemptOutcome::kDiverged, "loss is nan at 150 tokens");
  EXPECT_EQ(Cell(kTrunk).state, CellState::kDiverged);
  CellInfo b2 = Cell(kBranch2);
  EXPECT_EQ(b2.state, CellState::kDiverged);
  EXPECT_EQ(b2.last_error, "trunk " + std::string(kTrunk) + " diverged: loss is nan at 150 tokens");
  EXPECT_EQ(LastEventReason(kBranch2), b2.last_error);
  EXPECT_EQ(Cell(kBranch1).state, CellState::kQueued);  // its checkpoint was written first
}

TEST_F(SqliteTrunksTest, ACancelledTrunkEndsItsWaitingBranches) {
  Add();
  // Queued: it ends at once, and so do its branches.
  absl::StatusOr<int> cancelled = store_->CancelCells(kStudy, {kTrunk});
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(*cancelled, 1);
  EXPECT_EQ(Cell(kTrunk).state, CellState::kCancelled);
  for (const char* branch : {kBranch1, kBranch2}) {
    EXPECT_EQ(Cell(branch).state, CellState::kFailed);
    EXPECT_EQ(Cell(branch).last_error, "trunk " + std::string(kTrunk) + " cancelled");
  }
  EXPECT_EQ(Cell(kAlone).state, CellState::kQueued);
}

TEST_F(SqliteTrunksTest, ARunningTrunkCancelledEndsItsBranchesWhenItsAttemptEnds) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  Checkpoint(trunk, 100);
  ASSERT_TRUE(store_->CancelCells(kStudy, {kTrunk}).ok());
  // Its attempt may still succeed, which would win: the branches wait until it ends.
  EXPECT_EQ(Cell(kBranch2).state, CellState::kQueued);
  Finish(trunk, AttemptOutcome::kCancelled, "cancelled");
  EXPECT_EQ(Cell(kTrunk).state, CellState::kCancelled);
  EXPECT_EQ(Cell(kBranch2).state, CellState::kFailed);
  EXPECT_EQ(Cell(kBranch2).last_error, "trunk " + std::string(kTrunk) + " cancelled: cancelled");
  EXPECT_EQ(Cell(kBranch1).state, CellState::kQueued);
}

TEST_F(SqliteTrunksTest, RerunFreshOfATrunkMakesItsBranchesWaitAgain) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  Checkpoint(trunk, 100);
  Checkpoint(trunk, 200);
  Finish(trunk, AttemptOutcome::kSucceeded);
  EXPECT_FALSE(Cell(kBranch1).waiting_for_trunk);
  ASSERT_TRUE(store_->RerunCells({kStudy, {}, {}, {kTrunk}, true}).ok());
  EXPECT_TRUE(Cell(kBranch1).waiting_for_trunk);
  EXPECT_TRUE(Cell(kBranch2).waiting_for_trunk);
  ClaimedJob again = ClaimTrunkBehindReadyBranches();
  EXPECT_TRUE(again.fresh);
}

TEST_F(SqliteTrunksTest, ResultsMetricStreamsAndCountsLeaveTrunksOut) {
  Add();
  ClaimedJob trunk = ClaimTrunk();
  ASSERT_TRUE(store_->AddMetrics(trunk.lease_id, {{"train/loss", 100, 3.0}}).ok());
  Checkpoint(trunk, 100);
  Checkpoint(trunk, 200);
  Finish(trunk, AttemptOutcome::kSucceeded);
  std::optional<ClaimedJob> b1 = Claim();
  ASSERT_TRUE(b1.has_value());
  ASSERT_TRUE(store_->AddMetrics(b1->lease_id, {{"train/loss", 125, 2.5}}).ok());
  Finish(*b1, AttemptOutcome::kSucceeded);

  absl::StatusOr<std::vector<CellResult>> results = store_->Results(kStudy);
  ASSERT_TRUE(results.ok()) << results.status();
  std::vector<std::string> ids;
  for (const CellResult& r : *results) ids.push_back(r.cell.id);
  EXPECT_THAT(ids, ElementsAre(kBranch1, kBranch2, kAlone));
  EXPECT_EQ((*results)[0].final_metrics.at("train/loss"), 2.5);
  // A page that ends on the trunk's place skips it.
  absl::StatusOr<ResultPage> page = store_->Results(kStudy, CellPage{0, 2});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->results.size(), 2u);
  EXPECT_EQ(page->results[1].cell.id, kBranch2);

  std::set<std::string> cells;
  ASSERT_TRUE(store_
                  ->ForEachMetricPoint(
                      kStudy, {}, {},
                      [&](const std::string& cell, const std::string&, int64_t, double, int64_t) {
                        cells.insert(cell);
                        return true;
                      })
                  .ok());
  EXPECT_EQ(cells, (std::set<std::string>{kBranch1}));

  absl::StatusOr<StudyDetail> detail = store_->GetStudy(kStudy);
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(detail->study.cells_total, 3);
  EXPECT_EQ(detail->study.cells_by_state.at("succeeded"), 1);  // B1; the trunk is not counted
  EXPECT_EQ(detail->study.cells_by_state.at("queued"), 2);
  absl::StatusOr<std::vector<StudyInfo>> studies = store_->ListStudies();
  ASSERT_TRUE(studies.ok());
  EXPECT_EQ(studies->front().cells_total, 3);
}

}  // namespace
}  // namespace onset::coordinator
