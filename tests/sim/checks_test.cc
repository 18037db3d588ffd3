// The simulator's checks on made-up journals and databases with a known answer: each broken
// promise is caught, and a clean history passes (so that "no violation" from a simulation means
// something).
#include "tests/sim/checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "tests/sim/journal.h"
#include "tests/testing/temp_dir.h"

namespace onset::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kStep = 100;

class ChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Exec(
        "CREATE TABLE studies (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE cells (id INTEGER PRIMARY KEY, study_id INTEGER, hash TEXT, state TEXT, "
        "tokens_budget INTEGER, tokens_done INTEGER, role TEXT NOT NULL DEFAULT 'cell', "
        "trunk_id INTEGER, branch_tokens INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE metrics (cell_id INTEGER, name TEXT, tokens INTEGER, value REAL, "
        "attempt_id INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE attempts (cell_id INTEGER, attempt INTEGER, outcome TEXT, "
        "failure_class TEXT, id INTEGER PRIMARY KEY);"
        "INSERT INTO studies VALUES (1, 'sim');");
  }

  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "") << ": " << sql;
    sqlite3_free(error);
    sqlite3_close(db);
  }

  std::string Db() const { return dir_.File("onset.db"); }

  // A cell of 3 steps whose points all come from `run`.
  void Cell(int row, const std::string& hash, const std::string& state, uint64_t run = 7,
            int steps = 3) {
    Exec("INSERT INTO cells (id, study_id, hash, state, tokens_budget, tokens_done) VALUES (" +
         std::to_string(row) + ", 1, '" + hash + "', '" + state + "', 300, " +
         (state == "succeeded" ? "300" : "0") + ")");
    Points(row, run, 1, steps);
  }

  // train/loss and sim/run (`run`) of cell `row` at steps `from` to `to`.
  void Points(int row, uint64_t run, int from, int to) {
    for (int s = from; s <= to; ++s) {
      Exec("INSERT INTO metrics (cell_id, name, tokens, value) VALUES (" + std::to_string(row) +
           ", 'train/loss', " + std::to_string(s * kStep) + ", 1.0), (" + std::to_string(row) +
           ", 'sim/run', " + std::to_string(s * kStep) + ", " + std::to_string(run) + ")");
    }
  }

  // A WSD trunk (row 10, "t", to step 4) and a branch of it (row 11, "b", budget 6 steps,
  // branch point step 4), both succeeded; the branch's points up to step 4 are of trunk run
  // `trunk_run`, past it of `own_run`.
  void TrunkAndBranch(uint64_t trunk_run, uint64_t own_run) {
    Exec(
        "INSERT INTO cells (id, study_id, hash, state, tokens_budget, tokens_done, role) VALUES "
        "(10, 1, 't', 'succeeded', 400, 400, 'trunk');"
        "INSERT INTO cells (id, study_id, hash, state, tokens_budget, tokens_done, role, "
        "trunk_id, branch_tokens) VALUES (11, 1, 'b', 'succeeded', 600, 600, 'branch', 10, 400)");
    Points(10, trunk_run, 1, 4);
    Points(11, trunk_run, 1, 4);
    Points(11, own_run, 5, 6);
  }

  void Journal(const std::string& kind, const std::string& cell, int attempt,
               std::map<std::string, std::string> fields = {}, int64_t at = 1000) {
    JournalEntry e;
    e.at_unix_ms = at;
    e.kind = kind;
    e.cell = cell;
    e.attempt = attempt;
    e.pid = 1;
    e.fields = std::move(fields);
    Append(dir_.path(), e);
  }

  std::vector<std::string> Check(std::map<std::string, int64_t> fresh = {},
                                 const std::string& checkpoint_root = "") {
    CheckInput input;
    input.db = Db();
    input.journal_dir = dir_.path();
    input.step_tokens = kStep;
    input.fresh_reruns = std::move(fresh);
    input.checkpoint_root = checkpoint_root;
    CellCounts counts;
    return CheckInvariants(input, &counts);
  }

  testutil::TempDir dir_;
};

TEST_F(ChecksTest, ACleanHistoryPasses) {
  Cell(1, "a", "succeeded");
  Cell(2, "b", "cancelled", 9, 1);
  Exec(
      "INSERT INTO attempts (cell_id, attempt, outcome, failure_class) VALUES (1, 1, 'lost', "
      "'lost'), (1, 2, 'failed', 'crash'), (1, 3, 'succeeded', ''), (2, 1, 'lost', "
      "'unconfirmed')");
  Journal("NEWRUN", "a", 1, {{"run", "7"}});
  Journal("START", "a", 1, {{"run", "7"}});
  Journal("START", "a", 2, {{"run", "7"}});
  Journal("CRASH", "a", 2);
  Journal("START", "a", 3, {{"run", "7"}});
  EXPECT_THAT(Check(), IsEmpty());
}

TEST_F(ChecksTest, EveryBrokenPromiseIsNamed) {
  Journal("VIOLATION", "a", 2, {{"what", "another trainer of this cell runs"}});
  EXPECT_THAT(Check(), ElementsAre("cell a attempt 2: another_trainer_of_this_cell_runs"));
}

TEST_F(ChecksTest, PointsOfTwoRunsAreMixed) {
  Cell(1, "a", "succeeded");
  Exec("UPDATE metrics SET value = 8 WHERE name = 'sim/run' AND tokens = 200");
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("its points come from 2 runs: 7 8")));
}

TEST_F(ChecksTest, PointsOfARunFromBeforeAFreshRerunSurvive) {
  Cell(1, "a", "succeeded");
  Journal("NEWRUN", "a", 1, {{"run", "7"}}, /*at=*/1000);
  EXPECT_THAT(Check({{"a", 2000}}),
              ElementsAre(HasSubstr("keeps points of run 7, which started before the fresh")));
  EXPECT_THAT(Check({{"a", 500}}), IsEmpty());
}

TEST_F(ChecksTest, AnIncompleteCurveOrAPointPastTheBudget) {
  Cell(1, "a", "succeeded", 7, 2);
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("its curve misses 1 of its steps")));
  Exec(
      "INSERT INTO metrics (cell_id, name, tokens, value) VALUES (1, 'train/loss', 300, 1.0), "
      "(1, 'train/loss', 9000, 1.0)");
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("a point at 9000 tokens, past its budget")));
}

TEST_F(ChecksTest, FailuresCountedForNothing) {
  Cell(1, "a", "failed", 7, 1);
  Exec(
      "INSERT INTO attempts (cell_id, attempt, outcome, failure_class) VALUES (1, 1, 'failed', "
      "'crash'), (1, 2, 'lost', 'lost')");
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("attempt 1: a crash counted, but its trainer did not"),
                                   HasSubstr("attempt 2: a loss counted, but its trainer never")));
}

TEST_F(ChecksTest, ACellThatDidNotEnd) {
  Cell(1, "a", "running", 7, 1);
  Cell(2, "b", "backoff", 7, 1);
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("sim/a (running): did not end"),
                                   HasSubstr("sim/b (backoff): did not end")));
}

TEST_F(ChecksTest, ABranchKeepsItsTrunksPointsUpToItsBranchPointAndItsOwnPastIt) {
  TrunkAndBranch(/*trunk_run=*/5, /*own_run=*/6);
  Journal("NEWRUN", "t", 1, {{"run", "5"}});
  Journal("NEWRUN", "b", 1, {{"run", "6"}, {"trunk_run", "5"}, {"branch_at", "400"}});
  EXPECT_THAT(Check(), IsEmpty());
}

TEST_F(ChecksTest, ABranchWhoseDecayStartedFromAnotherTrunkRun) {
  TrunkAndBranch(/*trunk_run=*/5, /*own_run=*/6);
  Journal("NEWRUN", "t", 1, {{"run", "5"}});
  Journal("NEWRUN", "b", 1, {{"run", "6"}, {"trunk_run", "4"}, {"branch_at", "400"}});
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("its decay (run 6) started from trunk run 4, but its "
                                             "points up to its branch point are of trunk run 5")));
}

TEST_F(ChecksTest, ABranchWithPointsOfTwoTrunkRunsOrTwoRunsOfItsOwn) {
  TrunkAndBranch(/*trunk_run=*/5, /*own_run=*/6);
  Journal("NEWRUN", "b", 1, {{"run", "6"}, {"trunk_run", "5"}, {"branch_at", "400"}});
  Exec("UPDATE metrics SET value = 3 WHERE cell_id = 11 AND name = 'sim/run' AND tokens = 100");
  Exec("UPDATE metrics SET value = 7 WHERE cell_id = 11 AND name = 'sim/run' AND tokens = 600");
  EXPECT_THAT(Check(),
              ElementsAre(HasSubstr("its points past its branch point come from 2 runs: 6 7"),
                          HasSubstr("its points up to its branch point come from 2 trunk runs")));
}

TEST_F(ChecksTest, ABranchTrainerThatStartedFromScratch) {
  TrunkAndBranch(/*trunk_run=*/5, /*own_run=*/6);
  Journal("NEWRUN", "b", 1, {{"run", "6"}});
  EXPECT_THAT(Check(),
              ElementsAre(HasSubstr("a trainer of this branch started run 6 from scratch")));
}

TEST_F(ChecksTest, AfterAFreshRerunOfABranchItsTrunksPointsCameWithANewStart) {
  TrunkAndBranch(/*trunk_run=*/5, /*own_run=*/6);
  Journal("NEWRUN", "b", 1, {{"run", "6"}, {"trunk_run", "5"}, {"branch_at", "400"}},
          /*at=*/3000);
  EXPECT_THAT(Check({{"b", 2000}}), IsEmpty());
  EXPECT_THAT(Check({{"b", 4000}}),
              ElementsAre(HasSubstr("keeps points of run 6, which started before the fresh"),
                          HasSubstr("keeps points of trunk run 5, which no start of the branch")));
}

TEST_F(ChecksTest, ATrunkCheckpointABranchStartsFromIsKept) {
  TrunkAndBranch(/*trunk_run=*/5, /*own_run=*/6);
  Journal("NEWRUN", "b", 1, {{"run", "6"}, {"trunk_run", "5"}, {"branch_at", "400"}});
  Exec(
      "INSERT INTO attempts (id, cell_id, attempt, outcome, failure_class) VALUES (7, 10, 2, "
      "'succeeded', '');"
      "INSERT INTO metrics (cell_id, name, tokens, value, attempt_id) VALUES (10, "
      "'checkpoint/bytes', 400, 100, 7)");
  const std::string root = dir_.File("checkpoints");
  const std::string file = root + "/sim/t/attempt-2/ckpt-000000000400.pt";
  EXPECT_THAT(Check({}, root), ElementsAre(HasSubstr("its checkpoint at 400 tokens, which a "
                                                     "branch starts from, is gone: " +
                                                     file)));
  std::filesystem::create_directories(root + "/sim/t/attempt-2");
  std::ofstream(file) << "x";
  EXPECT_THAT(Check({}, root), IsEmpty());
}

}  // namespace
}  // namespace onset::sim
