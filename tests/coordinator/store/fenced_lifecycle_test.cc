// The fenced cell lifecycle on the real store, one test per hole that earlier versions had (up to
// 5ce5514): a cell runs once at a time, what it records is one run's, and every call's cost is
// bounded by its own size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/study/sample_studies.h"
#include "tests/coordinator/test_util.h"
#include "tests/testing/temp_dir.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;

class FencedLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
  }

  ClaimedJob Claim() {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(job.ok() && job->has_value());
    return job.ok() ? job->value_or(ClaimedJob{}) : ClaimedJob{};
  }

  // Claims until `cell` is claimed (the cells before it are handed back at once); its job.
  ClaimedJob ClaimCell(const std::string& cell) {
    for (int i = 0; i < 10; ++i) {
      ClaimedJob job = Claim();
      if (job.cell_id == cell) return job;
      EXPECT_TRUE(store_->FinishAttempt(job.lease_id, Ended(AttemptOutcome::kHandedBack)).ok());
    }
    ADD_FAILURE() << "cell " << cell << " was never claimed";
    return {};
  }

  static AttemptEnd Ended(AttemptOutcome outcome) {
    AttemptEnd end;
    end.outcome = outcome;
    end.exit_code = 0;
    return end;
  }

  CellInfo Cell(const std::string& id) { return testing::FindCell(*store_, "small", id); }

  std::vector<std::pair<std::string, int64_t>> Points(const std::string& cell) {
    std::vector<std::pair<std::string, int64_t>> points;
    EXPECT_TRUE(store_
                    ->ForEachMetricPoint("small", {}, {cell},
                                         [&](const std::string&, const std::string& name,
                                             int64_t tokens, double, int64_t) {
                                           points.emplace_back(name, tokens);
                                           return true;
                                         })
                    .ok());
    return points;
  }

  testutil::TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::string worker_;
};

// Cancel, then rerun, of a running cell runs it once more, after its attempt ended: never
// two attempts at once, and the old attempt is told to stop and heard no more.
TEST_F(FencedLifecycleTest, CancelThenRerunOfARunningCellRunsItOnceAtATime) {
  ClaimedJob first = Claim();
  ASSERT_TRUE(store_->RecordProgress(first.lease_id, 100, 1).ok());
  ASSERT_EQ(*store_->CancelCells("small", {first.cell_id}), 1);
  RerunRequest rerun;
  rerun.study = "small";
  rerun.cell_ids = {first.cell_id};
  rerun.states = {CellState::kCancelled};
  ASSERT_EQ(*store_->RerunCells(rerun), 1);
  EXPECT_EQ(Cell(first.cell_id).state, CellState::kRunning);
  // Every other cell may be claimed meanwhile, this one not.
  std::set<std::string> claimed;
  while (true) {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    ASSERT_TRUE(job.ok()) << job.status();
    if (!job->has_value()) break;
    claimed.insert((*job)->cell_id);
  }
  EXPECT_EQ(claimed.count(first.cell_id), 0u);
  EXPECT_EQ(claimed.size(), 5u);
  // The running attempt hears it must stop; it reports so, and only then the cell runs again.
  EXPECT_TRUE(store_->RecordProgress(first.lease_id, 200, 1)->cancelled);
  ASSERT_TRUE(store_->FinishAttempt(first.lease_id, Ended(AttemptOutcome::kCancelled)).ok());
  EXPECT_EQ(Cell(first.cell_id).state, CellState::kQueued);
  ClaimedJob second = Claim();
  EXPECT_EQ(second.cell_id, first.cell_id);
  EXPECT_EQ(second.attempt, 2);
  // The first attempt's late calls are fenced: nothing it sends is recorded.
  EXPECT_EQ(store_->AddMetrics(first.lease_id, {{"train/loss", 300, 1.0}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->FinishAttempt(first.lease_id, Ended(AttemptOutcome::kSucceeded)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Cell(first.cell_id).state, CellState::kRunning);
  // And a cancelled report of the old attempt cancels nothing.
  EXPECT_EQ(store_->FinishAttempt(first.lease_id, Ended(AttemptOutcome::kCancelled)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->FinishAttempt(second.lease_id, Ended(AttemptOutcome::kSucceeded)).ok());
  EXPECT_EQ(Cell(first.cell_id).state, CellState::kSucceeded);
}

// `rerun --fresh` is not lost with a claim whose reply never reached its worker: the next
// attempt still starts from scratch, and no point of the discarded run comes back.
TEST_F(FencedLifecycleTest, AFreshRerunSurvivesAClaimWhoseReplyWasLost) {
  ClaimedJob first = Claim();
  ASSERT_TRUE(
      store_
          ->AddMetrics(first.lease_id, {{"checkpoint/bytes", 1000, 10}, {"train/loss", 1000, 3.0}})
          .ok());
  ASSERT_TRUE(store_->FinishAttempt(first.lease_id, Ended(AttemptOutcome::kSucceeded)).ok());
  RerunRequest fresh;
  fresh.study = "small";
  fresh.cell_ids = {first.cell_id};
  fresh.states = {CellState::kSucceeded};
  fresh.fresh = true;
  ASSERT_EQ(*store_->RerunCells(fresh), 1);
  EXPECT_TRUE(Points(first.cell_id).empty());
  ClaimedJob lost = ClaimCell(first.cell_id);
  EXPECT_TRUE(lost.fresh);
  EXPECT_TRUE(lost.resume_from.empty());
  // Its worker never heard of it: the lease runs out.
  ASSERT_TRUE(store_->ExpireAttempt(lost.lease_id, "lease expired", 0).ok());
  ClaimedJob next = ClaimCell(first.cell_id);
  EXPECT_TRUE(next.resume_from.empty()) << "resumes the discarded run";
  EXPECT_TRUE(Points(first.cell_id).empty());
  EXPECT_EQ(Cell(first.cell_id).failures, 0);
}

// A success that reaches the coordinator after the lease expired (a full disk around the
// attempt's end) stands while no other attempt has run, and its loss no longer counts.
TEST_F(FencedLifecycleTest, ASuccessReportedAfterTheLeaseExpiredStands) {
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->RecordProgress(job.lease_id, 100, 1).ok());
  ASSERT_TRUE(store_->ExpireAttempt(job.lease_id, "lease expired", 2'000).ok());
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kBackoff);
  EXPECT_EQ(Cell(job.cell_id).failures, 1);
  ASSERT_TRUE(store_->FinishAttempt(job.lease_id, Ended(AttemptOutcome::kSucceeded)).ok());
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kSucceeded);
  EXPECT_EQ(Cell(job.cell_id).failures, 0);
  // Not once another attempt was claimed.
  ClaimedJob other = Claim();
  ASSERT_TRUE(store_->RecordProgress(other.lease_id, 100, 1).ok());
  ASSERT_TRUE(store_->ExpireAttempt(other.lease_id, "lease expired", 0).ok());
  clock_.Advance(RetryPolicy().base_backoff);
  ClaimedJob again = ClaimCell(other.cell_id);
  EXPECT_EQ(store_->FinishAttempt(other.lease_id, Ended(AttemptOutcome::kSucceeded)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Cell(other.cell_id).state, CellState::kRunning);
  EXPECT_EQ(again.attempt, 2);
}

// A point past the attempt's bound (its budget, one step and one evaluation interval) is
// refused alone, and never becomes a succeeded cell's progress.
TEST_F(FencedLifecycleTest, APointPastTheBudgetIsRefusedAndNeverShownAsProgress) {
  ClaimedJob job = Claim();
  const int64_t budget = job.tokens_budget;
  absl::StatusOr<int> stored = store_->AddMetrics(
      job.lease_id,
      {{"train/loss", budget, 1.0}, {"train/loss", int64_t{1'000'000'000'000'000}, 1.0}});
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, 1);
  ASSERT_TRUE(store_->RecordProgress(job.lease_id, int64_t{1'000'000'000'000'000}, 1).ok());
  EXPECT_EQ(Cell(job.cell_id).tokens_done, 0);
  ASSERT_TRUE(store_->FinishAttempt(job.lease_id, Ended(AttemptOutcome::kSucceeded)).ok());
  EXPECT_EQ(Cell(job.cell_id).tokens_done, budget);
}

// A listing of workers comes in pages, each read by index; together the pages hold every
// worker once, the most recently seen first.
TEST_F(FencedLifecycleTest, WorkersAreListedInBoundedPages) {
  for (int i = 0; i < 250; ++i) {
    clock_.Advance(std::chrono::milliseconds(1));
    ASSERT_TRUE(store_->RegisterWorker({"h" + std::to_string(i), 1, "v"}).ok());
  }
  WorkerQuery query;
  query.limit = 100;
  std::set<std::string> seen;
  int64_t last_seen = INT64_MAX;
  int pages = 0;
  while (true) {
    absl::StatusOr<WorkerPage> page = store_->ListWorkers(query);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_LE(page->workers.size(), 100u);
    EXPECT_EQ(page->matching, 251 - static_cast<int64_t>(seen.size()));
    for (const WorkerInfo& w : page->workers) {
      EXPECT_TRUE(seen.insert(w.id).second) << w.id << " listed twice";
      EXPECT_LE(w.last_seen_unix_ms, last_seen);
      last_seen = w.last_seen_unix_ms;
    }
    ++pages;
    if (!page->next) break;
    query.after = page->next;
  }
  EXPECT_EQ(seen.size(), 251u);  // and the fixture's
  EXPECT_EQ(pages, 3);
  // Live ones only: those seen lately that have not exited; the others are counted.
  query = WorkerQuery();
  query.live_since_unix_ms = clock_.WallUnixMs() - 9;
  absl::StatusOr<WorkerPage> live = store_->ListWorkers(query);
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->workers.size(), 10u);
  EXPECT_EQ(live->not_live, 241);
}

// The plan SQLite makes for `sql` on the database `path`, one line per step.
std::string QueryPlan(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string plan;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return "cannot open " + path;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &stmt, nullptr) !=
      SQLITE_OK) {
    plan = std::string("cannot prepare: ") + sqlite3_errmsg(db);
  }
  while (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
    plan += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
    plan += "\n";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return plan;
}

// Finding a cell by a prefix of its id walks an index, in one study or in all, whatever
// the number of cells (it scanned every cell before, and again after every commit a waiting
// `onset logs -f` saw).
TEST_F(FencedLifecycleTest, ACellIsFoundByAPrefixOfItsIdThroughAnIndex) {
  for (bool any_study : {false, true}) {
    const std::string plan = QueryPlan(dir_.File("onset.db"), rows::CellsByPrefixSql(any_study));
    SCOPED_TRACE(plan);
    EXPECT_THAT(plan, HasSubstr("SEARCH c USING"));
    EXPECT_THAT(plan, ::testing::Not(HasSubstr("SCAN c")));
  }
}

// Cancel and rerun of named cells cost one indexed lookup per id (a rerun of one cell read the
// whole study before), and carry out the lifecycle on those cells alone.
TEST_F(FencedLifecycleTest, NamedCellsAreCancelledAndRerunByTheirIdsAlone) {
  const std::string plan = QueryPlan(dir_.File("onset.db"), rows::CellByIdSql());
  SCOPED_TRACE(plan);
  EXPECT_THAT(plan, HasSubstr("SEARCH cells USING"));
  EXPECT_THAT(plan, ::testing::Not(HasSubstr("SCAN")));
  absl::StatusOr<StudyDetail> study = store_->GetStudy("small");
  ASSERT_TRUE(study.ok()) << study.status();
  ASSERT_EQ(study->cells.size(), 6u);
  const std::string named = study->cells[2].id;
  auto states = [&] {
    std::vector<CellState> out;
    for (const CellInfo& c : store_->GetStudy("small")->cells) out.push_back(c.state);
    return out;
  };
  std::vector<CellState> expected(6, CellState::kQueued);
  ASSERT_EQ(*store_->CancelCells("small", {named, named}), 1);  // named twice: once
  expected[2] = CellState::kCancelled;
  EXPECT_EQ(states(), expected);
  RerunRequest rerun;
  rerun.study = "small";
  rerun.cell_ids = {named};
  ASSERT_EQ(*store_->RerunCells(rerun), 1);
  expected[2] = CellState::kQueued;
  EXPECT_EQ(states(), expected);
  // An unknown id among them is named, and nothing of the request is carried out.
  absl::StatusOr<int> unknown = store_->CancelCells("small", {named, "0123456789abcdef"});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("0123456789abcdef"));
  EXPECT_EQ(states(), expected);
}

// Cancel and rerun of a whole study change it in transactions of at most kCellsPerWrite cells,
// so leases and heartbeats pass between them; every cell is still changed once.
TEST_F(FencedLifecycleTest, AStudyWideCancelAndRerunAreWrittenInBoundedTransactions) {
  constexpr int kCells = 2 * static_cast<int>(SqliteStore::kCellsPerWrite) + 1;
  absl::StatusOr<StudySpec> spec = ParseStudyFile("wide.yaml", R"yaml(name: wide
model:
  layers: 2
  d_model: 16
  heads: 2
  seq_len: 32
train:
  tokens: 4K
  batch_tokens: 256
grid:
  arch: [full]
  seeds: )yaml" + std::to_string(kCells) + "\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(store_->AddStudy({spec->name, "", "wide.yaml", spec->source_yaml, spec->cells}).ok());
  auto count = [&](CellState state) {
    int n = 0;
    for (const CellInfo& c : store_->GetStudy("wide")->cells) n += c.state == state ? 1 : 0;
    return n;
  };
  int64_t commits = store_->ChangeVersion();
  ASSERT_EQ(*store_->CancelCells("wide", {}), kCells);
  EXPECT_EQ(count(CellState::kCancelled), kCells);
  EXPECT_GE(store_->ChangeVersion() - commits, 3);
  commits = store_->ChangeVersion();
  RerunRequest rerun;
  rerun.study = "wide";
  rerun.states = {CellState::kCancelled};
  ASSERT_EQ(*store_->RerunCells(rerun), kCells);
  EXPECT_EQ(count(CellState::kQueued), kCells);
  EXPECT_GE(store_->ChangeVersion() - commits, 3);
  // The other study is untouched.
  for (const CellInfo& c : store_->GetStudy("small")->cells) EXPECT_EQ(c.state, CellState::kQueued);
}

}  // namespace
}  // namespace onset::coordinator
