// The simulator's checks on made-up journals and databases with a known answer: each broken
// promise is caught, and a clean history passes (so that "no violation" from a simulation means
// something).
#include "tests/sim/checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

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
        "tokens_budget INTEGER, tokens_done INTEGER);"
        "CREATE TABLE metrics (cell_id INTEGER, name TEXT, tokens INTEGER, value REAL);"
        "CREATE TABLE attempts (cell_id INTEGER, attempt INTEGER, outcome TEXT, "
        "failure_class TEXT);"
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
    Exec("INSERT INTO cells VALUES (" + std::to_string(row) + ", 1, '" + hash + "', '" + state +
         "', 300, " + (state == "succeeded" ? "300" : "0") + ")");
    for (int s = 1; s <= steps; ++s) {
      Exec("INSERT INTO metrics VALUES (" + std::to_string(row) + ", 'train/loss', " +
           std::to_string(s * kStep) + ", 1.0), (" + std::to_string(row) + ", 'sim/run', " +
           std::to_string(s * kStep) + ", " + std::to_string(run) + ")");
    }
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

  std::vector<std::string> Check(std::map<std::string, int64_t> fresh = {}) {
    CheckInput input;
    input.db = Db();
    input.journal_dir = dir_.path();
    input.step_tokens = kStep;
    input.fresh_reruns = std::move(fresh);
    CellCounts counts;
    return CheckInvariants(input, &counts);
  }

  testutil::TempDir dir_;
};

TEST_F(ChecksTest, ACleanHistoryPasses) {
  Cell(1, "a", "succeeded");
  Cell(2, "b", "cancelled", 9, 1);
  Exec(
      "INSERT INTO attempts VALUES (1, 1, 'lost', 'lost'), (1, 2, 'failed', 'crash'), "
      "(1, 3, 'succeeded', ''), (2, 1, 'lost', 'unconfirmed')");
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
  Exec("INSERT INTO metrics VALUES (1, 'train/loss', 300, 1.0), (1, 'train/loss', 9000, 1.0)");
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("a point at 9000 tokens, past its budget")));
}

TEST_F(ChecksTest, FailuresCountedForNothing) {
  Cell(1, "a", "failed", 7, 1);
  Exec("INSERT INTO attempts VALUES (1, 1, 'failed', 'crash'), (1, 2, 'lost', 'lost')");
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("attempt 1: a crash counted, but its trainer did not"),
                                   HasSubstr("attempt 2: a loss counted, but its trainer never")));
}

TEST_F(ChecksTest, ACellThatDidNotEnd) {
  Cell(1, "a", "running", 7, 1);
  Cell(2, "b", "backoff", 7, 1);
  EXPECT_THAT(Check(), ElementsAre(HasSubstr("sim/a (running): did not end"),
                                   HasSubstr("sim/b (backoff): did not end")));
}

}  // namespace
}  // namespace onset::sim
