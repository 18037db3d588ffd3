// What operators do, on the real onsetd, onset-workers and `onset` with the scripted trainer:
// the documented restore while workers run never runs a cell twice, numbers the new
// generation's attempts apart, and every cell still ends with its whole curve (checks.h). The
// scenario is the one that ran a cell twice at 84b5e0f: a cell queued in the backup started
// after it, and an idle worker took it at once after the restore while its old trainer still
// ran (its worker cut off from the coordinator, as a worker whose network hiccups is). Skips when a
// binary is missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "cli/client/study_client.h"
#include "tests/sim/checks.h"
#include "tests/sim/cluster.h"
#include "tests/sim/journal.h"
#include "tests/sim/study_files.h"

namespace onset::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::IsEmpty;

std::string BinDir() {
  const char* dir = std::getenv("ONSET_BIN_DIR");
  return dir == nullptr ? "" : dir;
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

class OperatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* b : {"onsetd", "onset-worker", "onset", "onset-sim-trainer"}) {
      if (!fs::exists(fs::path(BinDir()) / b)) GTEST_SKIP() << b << " not built";
    }
    dir_ = (fs::temp_directory_path() /
            ("onset-operator-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override {
    cluster_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Leases of 20 s: much longer than onsetd takes to stop and start again while a worker is cut
  // off (its call in flight holds the shutdown up to 5 s) and the idle workers take to come back
  // (their retries back off), as with the default 30 s.
  void StartCluster(int workers) {
    ClusterConfig config;
    config.bin_dir = BinDir();
    config.dir = dir_;
    config.workers = workers;
    config.lease_ttl_ms = 20'000;
    config.heartbeat_ms = 1'000;
    cluster_ = std::make_unique<Cluster>(config);
    std::string why;
    ASSERT_TRUE(cluster_->Start(&why)) << why;
    client_ = std::make_unique<cli::StudyClient>(cluster_->address(),
                                                 common::ClientSecurity{cluster_->token(), ""},
                                                 std::chrono::seconds(5));
  }

  // The states of the study's cells, by cell id ("" when it cannot be read now).
  std::map<std::string, v1::CellState> States() {
    std::map<std::string, v1::CellState> states;
    absl::StatusOr<v1::GetStudyResponse> study = client_->Get("ops");
    if (!study.ok()) return states;
    for (const v1::Cell& c : study->cells()) states[c.id()] = c.state();
    return states;
  }
  int Count(v1::CellState state) {
    int n = 0;
    for (const auto& [id, s] : States()) n += s == state ? 1 : 0;
    return n;
  }

  // The index of the worker whose work directory holds an attempt of `cell`.
  int WorkerOf(const std::string& cell) {
    for (int i = 0; i < cluster_->workers(); ++i) {
      if (fs::exists(fs::path(dir_) / ("w" + std::to_string(i)) / cell)) return i;
    }
    return -1;
  }

  std::string dir_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<cli::StudyClient> client_;
};

TEST_F(OperatorTest, TheDocumentedRestoreWhileWorkersRunNeverRunsACellTwice) {
  StartCluster(/*workers=*/3);
  // Four long cells for three workers: the fourth waits in the queue when the backup is taken.
  absl::StatusOr<v1::SubmitStudyResponse> submitted =
      client_->Submit("ops.yaml", StudyFile("ops", /*cells=*/4, /*steps=*/200));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  ASSERT_TRUE(
      WaitFor([&] { return Count(v1::CELL_STATE_RUNNING) == 3; }, std::chrono::seconds(30)));
  std::string queued;
  std::vector<std::string> running;
  for (const auto& [id, s] : States()) {
    if (s == v1::CELL_STATE_QUEUED) queued = id;
    if (s == v1::CELL_STATE_RUNNING) running.push_back(id);
  }
  ASSERT_FALSE(queued.empty());
  const std::string backup = dir_ + "/backup.db";
  const CliRun taken = cluster_->RunCli({"backup", "--out", backup});
  ASSERT_EQ(taken.code, 0) << taken.err;

  // Two running cells are cancelled: the queued one starts on a worker they free, and the other
  // goes idle.
  const CliRun cancelled = cluster_->RunCli({"cancel", "ops", running[0], running[1]});
  ASSERT_EQ(cancelled.code, 0) << cancelled.err;
  ASSERT_TRUE(WaitFor([&] { return States()[queued] == v1::CELL_STATE_RUNNING; },
                      std::chrono::seconds(30)));
  // The claim is recorded before its worker makes the cell's directory: wait for that too.
  int runs_it = -1;
  ASSERT_TRUE(WaitFor([&] { return (runs_it = WorkerOf(queued)) >= 0; }, std::chrono::seconds(30)));
  // Its worker loses the coordinator (its trainer runs on until its view of the lease runs out),
  // while the idle one would claim the cell, queued in the backup, at once.
  cluster_->Cut(runs_it);
  std::string why;
  const int64_t restored_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  ASSERT_TRUE(cluster_->RestoreBackup(backup, &why)) << why;
  std::this_thread::sleep_for(std::chrono::seconds(5));
  cluster_->Heal(runs_it);
  // The cancels were lost with the timeline after the backup: every cell runs to its end.
  ASSERT_TRUE(WaitFor(
      [&] {
        std::map<std::string, v1::CellState> states = States();
        if (states.size() != 4) return false;
        for (const auto& [id, s] : states) {
          if (s != v1::CELL_STATE_SUCCEEDED) return false;
        }
        return true;
      },
      std::chrono::seconds(180)));
  CheckInput input;
  for (const auto& [id, s] : States()) input.expected_cells.push_back(id);
  cluster_->Stop();

  input.db = cluster_->Db();
  input.journal_dir = cluster_->JournalDir();
  input.step_tokens = kStepTokens;
  input.restores_unix_ms = {restored_at};
  CellCounts counts;
  EXPECT_THAT(CheckInvariants(input, &counts), IsEmpty());
  EXPECT_EQ(counts.succeeded, 4);

  // Every attempt claimed after the restore is of generation 2, numbered from 1000001.
  int max_attempt = 0;
  for (const JournalEntry& e : ReadJournal(cluster_->JournalDir())) {
    if (e.kind == "START" && e.cell == queued) max_attempt = std::max(max_attempt, e.attempt);
  }
  EXPECT_GE(max_attempt, 1'000'001) << "the restored generation reused an attempt number";
}

}  // namespace
}  // namespace onset::sim
