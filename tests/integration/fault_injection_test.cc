// Fault injection on loopback with the real binaries: trainers, workers and the coordinator are
// killed or stopped mid-study, and every study must still end with every cell succeeded and
// every metric curve complete, without a point lost or duplicated. Skips when a binary is
// missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "tests/integration/harness.h"
#include "tests/testing/tcp_proxy.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using testing::ResumedAt;
using testing::Start;
using testing::TrainersMatching;
using testing::TrainersOfCell;
using testing::WaitForFile;
using worker::PosixProcessLauncher;

constexpr auto kTimeout = std::chrono::minutes(4);

// Four cells of 128 steps of 1024 tokens; a train point every 8 steps, a checkpoint every 16K
// tokens: long enough (a few seconds each) to be hit mid-run.
constexpr char kStudy[] = R"(name: faults
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1024, micro_batch: 16, log_every_steps: 8, checkpoint_every_tokens: 16384,
        keep_checkpoints: 2}
eval: {every_tokens: 64K, heldout_seqs: 2, niah_lengths: [64], niah_depths: [0.5], niah_samples: 1}
grid:
  arch: [full, "swa:1"]
  window: [16]
  tokens: [131072]
  seeds: 2
)";
constexpr int kCells = 4;
constexpr int64_t kTokensPerStep = 1024;
constexpr int kSteps = 128;
constexpr int kLogEvery = 8;

// A free loopback port, so that a restarted coordinator can come back at the same address.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

struct AttemptRow {
  std::string cell;
  int attempt = 0;
  std::string outcome, failure_class, stderr_tail;
};

std::vector<AttemptRow> Attempts(const fs::path& db) {
  std::vector<AttemptRow> rows;
  testing::ForEachRow(
      db,
      "SELECT c.hash, a.attempt, COALESCE(a.outcome, ''), a.failure_class, "
      "a.stderr_tail FROM attempts a JOIN cells c ON c.id = a.cell_id "
      "ORDER BY a.id",
      {}, [&](sqlite3_stmt* row) {
        rows.push_back({testing::Text(row, 0), sqlite3_column_int(row, 1), testing::Text(row, 2),
                        testing::Text(row, 3), testing::Text(row, 4)});
      });
  return rows;
}

// (cell) -> the sorted token counts of its train/loss points, each once by construction of the
// table's key; the test compares them with the uninterrupted schedule.
std::map<std::string, std::vector<int64_t>> LossTokens(const fs::path& db) {
  std::map<std::string, std::vector<int64_t>> out;
  testing::ForEachRow(db,
                      "SELECT c.hash, m.tokens FROM metrics m JOIN cells c ON c.id = m.cell_id "
                      "WHERE m.name = 'train/loss' ORDER BY c.hash, m.tokens",
                      {}, [&](sqlite3_stmt* row) {
                        out[testing::Text(row, 0)].push_back(sqlite3_column_int64(row, 1));
                      });
  return out;
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing;
    if (!HaveBinaries({"onsetd", "onset-worker", "onset-train"}, &missing)) {
      GTEST_SKIP() << missing << " not built";
    }
    dir_ = fs::temp_directory_path() /
           ("onset-faults-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    address_ = "127.0.0.1:" + std::to_string(FreePort());
    // Made before onsetd's first start, which then finds and keeps it (also across restarts).
    token_file_ = (dir_ / common::kTokenFileName).string();
    absl::StatusOr<std::string> token = common::LoadOrCreateTokenFile(token_file_);
    ASSERT_TRUE(token.ok()) << token.status();
    client_ = std::make_unique<cli::StudyClient>(address_, common::ClientSecurity{*token, ""},
                                                 std::chrono::seconds(5));
    StartDaemon();
  }
  void TearDown() override {
    for (Child& w : workers_) {
      if (w.process) w.process->Terminate(std::chrono::seconds(10));
    }
    if (daemon_.process) daemon_.process->Terminate(std::chrono::seconds(10));
    if (!HasFailure()) fs::remove_all(dir_);
  }

  fs::path Db() const { return dir_ / "onset.db"; }

  void StartDaemon() {
    daemon_ = Start(launcher_, "onsetd",
                    {"--db", Db().string(), "--listen", address_, "--lease-ttl-ms", "4000",
                     "--heartbeat-interval-ms", "300", "--retry-backoff-ms", "200",
                     "--checkpoint-root", (dir_ / "checkpoints").string()});
    ASSERT_NE(daemon_.process, nullptr);
    ASSERT_TRUE(WaitUntil([&] { return client_->List().ok(); })) << daemon_.process->StderrTail();
  }

  // Returns the index of the worker in workers_. `coordinator`: where it dials (the
  // coordinator's address unless given).
  size_t StartWorker(const std::string& name, const std::string& coordinator = "") {
    workers_.push_back(
        Start(launcher_, "onset-worker",
              {"--coordinator", coordinator.empty() ? address_ : coordinator, "--work-dir",
               (dir_ / name).string(), "--checkpoint-root", (dir_ / "checkpoints").string(),
               "--slots", "1", "--threads-per-job", "1", "--token-file", token_file_}));
    EXPECT_NE(workers_.back().process, nullptr);
    return workers_.size() - 1;
  }

  // kStudy, or under another name, or with cells of `steps` steps, or only its first cell.
  void Submit(const std::string& name = "faults", int steps = kSteps, bool one_cell = false) {
    steps_ = steps;
    cells_ = one_cell ? 1 : kCells;
    std::string text = kStudy;
    text.replace(text.find("faults"), 6, name);
    text.replace(text.find("131072"), 6, std::to_string(steps * kTokensPerStep));
    if (one_cell) {
      const std::string archs = "[full, \"swa:1\"]";
      const std::string seeds = "seeds: 2";
      text.replace(text.find(archs), archs.size(), "[full]");
      text.replace(text.find(seeds), seeds.size(), "seeds: 1");
    }
    absl::StatusOr<v1::SubmitStudyResponse> r = client_->Submit(name + ".yaml", text);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->cells_size(), cells_);
  }

  bool WaitUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // A running cell that has made `tokens` of progress (and so written a checkpoint).
  std::optional<v1::Cell> RunningCellPast(int64_t tokens) {
    absl::StatusOr<v1::GetStudyResponse> s = client_->Get("faults");
    if (!s.ok()) return std::nullopt;
    for (const v1::Cell& c : s->cells()) {
      if (c.state() == v1::CELL_STATE_RUNNING && c.tokens_done() >= tokens) return c;
    }
    return std::nullopt;
  }

  // A running cell past `tokens` that has a checkpoint the coordinator recorded (only those are
  // resumed: one whose report was still on its way when the fault struck is not).
  std::optional<v1::Cell> RunningCellWithCheckpointPast(int64_t tokens) {
    std::optional<v1::Cell> cell = RunningCellPast(tokens);
    if (!cell) return std::nullopt;
    int recorded = 0;
    testing::ForEachRow(Db(),
                        "SELECT COUNT(*) FROM metrics m JOIN cells c ON c.id = m.cell_id "
                        "WHERE c.hash = ? AND m.name = 'checkpoint/bytes'",
                        {cell->id()},
                        [&](sqlite3_stmt* row) { recorded = sqlite3_column_int(row, 0); });
    if (recorded == 0) return std::nullopt;
    return cell;
  }

  bool AllSucceeded(const std::string& study) {
    absl::StatusOr<v1::GetStudyResponse> s = client_->Get(study);
    return s.ok() && s->study().cells_by_state().count("succeeded") &&
           s->study().cells_by_state().at("succeeded") == cells_;
  }

  // Every cell succeeded, with the uninterrupted run's train/loss points, each exactly once.
  void ExpectCompleteAndContinuous() {
    ASSERT_TRUE(WaitUntil([&] {
      absl::StatusOr<v1::GetStudyResponse> s = client_->Get("faults");
      return s.ok() && s->study().cells_by_state().count("succeeded") &&
             s->study().cells_by_state().at("succeeded") == cells_;
    })) << client_->Get("faults")->DebugString()
        << "\ndaemon:\n"
        << daemon_.process->StderrTail();
    std::vector<int64_t> expected;
    for (int step = kLogEvery; step <= steps_; step += kLogEvery) {
      expected.push_back(step * kTokensPerStep);
    }
    std::map<std::string, std::vector<int64_t>> tokens = LossTokens(Db());
    ASSERT_EQ(tokens.size(), static_cast<size_t>(cells_));
    for (const auto& [cell, points] : tokens) EXPECT_EQ(points, expected) << cell;
  }

  int steps_ = kSteps;  // of the study's cells
  int cells_ = kCells;  // in the study
  fs::path dir_;
  std::string address_;
  std::string token_file_;
  PosixProcessLauncher launcher_;
  Child daemon_;
  std::vector<Child> workers_;
  std::unique_ptr<cli::StudyClient> client_;
};

// (study, the cell's grid point as its axes' JSON) -> train/loss as (tokens, value) pairs, in
// token order. Cells of two studies are matched by grid point: a study's name is part of its
// cells' configs, and so of their ids.
std::map<std::pair<std::string, std::string>, std::vector<std::pair<int64_t, double>>> LossCurves(
    const fs::path& db) {
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<int64_t, double>>> out;
  testing::ForEachRow(db,
                      "SELECT s.name, c.axes_json, m.tokens, m.value FROM metrics m "
                      "JOIN cells c ON c.id = m.cell_id JOIN studies s ON s.id = c.study_id "
                      "WHERE m.name = 'train/loss' ORDER BY s.name, c.axes_json, m.tokens",
                      {}, [&](sqlite3_stmt* row) {
                        out[{testing::Text(row, 0), testing::Text(row, 1)}].emplace_back(
                            sqlite3_column_int64(row, 2), sqlite3_column_double(row, 3));
                      });
  return out;
}

// A worker cut off from the coordinator (a proxy between them that the test cuts) for longer
// than the lease, while its trainer checkpoints: the worker stops its trainer before the cell is
// leased again, so at no moment do two trainers run one cell; the cell resumes elsewhere from an
// intact checkpoint, and every curve equals that of the same study run without the partition.
TEST_F(FaultInjectionTest, APartitionedWorkerStopsItsTrainerBeforeItsCellRunsElsewhere) {
  testutil::TcpProxy proxy(std::stoi(address_.substr(address_.rfind(':') + 1)));
  StartWorker("cut", proxy.address());
  // One cell of 1536 steps (over ten seconds): its trainer is still training when its lease runs
  // out, 4 s into the partition, and the other worker is free to take it at once.
  constexpr int kLongSteps = 1536;
  Submit("faults", kLongSteps, /*one_cell=*/true);
  // Sample every cell's trainers while the study runs: the most that ever ran at once.
  std::atomic<bool> sampling{true};
  std::map<std::string, size_t> most;
  std::thread sampler([&] {
    while (sampling) {
      std::map<std::string, size_t> now;
      for (pid_t pid : TrainersMatching(dir_.string(), "/faults/")) {
        std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        const std::string cmdline = text.str();
        const size_t at = cmdline.find("/faults/");
        if (at != std::string::npos) ++now[cmdline.substr(at + 8, 16)];
      }
      for (const auto& [cell, n] : now) most[cell] = std::max(most[cell], n);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::optional<v1::Cell> victim;
  ASSERT_TRUE(
      WaitUntil([&] { return (victim = RunningCellWithCheckpointPast(20'000)).has_value(); }));
  StartWorker("direct");  // the other side of the partition, ready to take the cell
  proxy.Cut();
  const auto cut_at = std::chrono::steady_clock::now();
  // The lease is 4 s: the victim's trainer must be gone once the cell runs again elsewhere.
  ASSERT_TRUE(WaitUntil([&] {
    absl::StatusOr<v1::GetStudyResponse> s = client_->Get("faults");
    if (!s.ok()) return false;
    for (const v1::Cell& c : s->cells()) {
      if (c.id() == victim->id()) return c.attempts() >= 2;
    }
    return false;
  }));
  std::this_thread::sleep_for(std::chrono::seconds(7) -
                              (std::chrono::steady_clock::now() - cut_at));
  proxy.Heal();
  ExpectCompleteAndContinuous();
  sampling = false;
  sampler.join();
  ASSERT_EQ(most.size(), 1u);
  for (const auto& [cell, n] : most) EXPECT_EQ(n, 1u) << cell << ": trainers at once";

  // The victim's first attempt was lost with its lease and not reported; the next resumed from
  // a checkpoint, which loads only when whole. No temporary file is left in its directory.
  std::vector<AttemptRow> victim_attempts;
  for (const AttemptRow& a : Attempts(Db())) {
    if (a.cell == victim->id()) victim_attempts.push_back(a);
  }
  ASSERT_GE(victim_attempts.size(), 2u);
  EXPECT_EQ(victim_attempts[0].outcome, "lost");
  EXPECT_EQ(victim_attempts.back().outcome, "succeeded");
  const std::vector<int64_t> resumed = ResumedAt(Db(), victim->id());
  ASSERT_FALSE(resumed.empty());
  EXPECT_GE(resumed[0], 16'384);
  EXPECT_LT(resumed[0], kLongSteps * kTokensPerStep);  // stopped mid-run, not after the end
  for (const auto& entry :
       fs::recursive_directory_iterator(dir_ / "checkpoints" / "faults" / victim->id())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }

  // The same study, run again without a fault, gives the same curves, bit for bit.
  Submit("calm", kLongSteps, /*one_cell=*/true);
  ASSERT_TRUE(WaitUntil([&] { return AllSucceeded("calm"); }));
  const auto curves = LossCurves(Db());
  for (const auto& [key, curve] : curves) {
    if (key.first != "faults") continue;
    const auto calm = curves.find({"calm", key.second});
    ASSERT_NE(calm, curves.end()) << key.second;
    EXPECT_EQ(curve, calm->second) << key.second;
  }
}

TEST_F(FaultInjectionTest, AKilledTrainerIsRetriedAndResumesFromItsCheckpoint) {
  StartWorker("w1");
  StartWorker("w2");
  Submit();
  std::optional<v1::Cell> victim;
  ASSERT_TRUE(WaitUntil([&] { return (victim = RunningCellPast(40'000)).has_value(); }));
  std::vector<pid_t> pids = TrainersOfCell(dir_.string(), victim->id());
  ASSERT_EQ(pids.size(), 1u);
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  ExpectCompleteAndContinuous();

  int victim_attempts = 0;
  for (const AttemptRow& a : Attempts(Db())) {
    if (a.cell != victim->id()) {
      EXPECT_EQ(a.attempt, 1) << a.cell;  // nobody else was retried
      continue;
    }
    ++victim_attempts;
    if (a.attempt == 1) {
      EXPECT_EQ(a.outcome, "failed");
      EXPECT_EQ(a.failure_class, "crash");
    } else {
      EXPECT_EQ(a.outcome, "succeeded");
    }
  }
  EXPECT_EQ(victim_attempts, 2);
  // Resumed from a checkpoint, not restarted.
  const std::vector<int64_t> resumed = ResumedAt(Db(), victim->id());
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_GE(resumed[0], 16'384);
}

TEST_F(FaultInjectionTest, AKilledWorkersCellIsFinishedByAnother) {
  const size_t first = StartWorker("w1");
  Submit();
  ASSERT_TRUE(WaitUntil([&] { return RunningCellPast(20'000).has_value(); }));
  ASSERT_EQ(::kill(workers_[first].process->pid(), SIGKILL), 0);
  workers_[first].process->Wait();
  StartWorker("w2");  // another machine: a different work directory
  ExpectCompleteAndContinuous();
  int lost = 0;
  for (const AttemptRow& a : Attempts(Db())) lost += a.outcome == "lost";
  EXPECT_EQ(lost, 1);  // the lease expired once
}

TEST_F(FaultInjectionTest, ARestartedCoordinatorLosesNothing) {
  std::string missing;
  if (!HaveBinaries({"onset"}, &missing)) GTEST_SKIP() << missing << " not built";
  StartWorker("w1");
  StartWorker("w2");
  Submit();
  // `onset watch` follows the study through the restart.
  Child watcher =
      Start(launcher_, "onset",
            {"watch", "faults", "--coordinator", address_, "--token-file", token_file_});
  ASSERT_NE(watcher.process, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return RunningCellPast(20'000).has_value(); }));
  ASSERT_EQ(::kill(daemon_.process->pid(), SIGKILL), 0);
  daemon_.process->Wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  StartDaemon();  // same database, same address: the workers carry on
  ExpectCompleteAndContinuous();
  for (const AttemptRow& a : Attempts(Db())) {
    EXPECT_NE(a.outcome, "failed") << a.cell << " attempt " << a.attempt;
  }

  // The watch saw every cell end exactly once, reconnected, and exits 0 as the study ended.
  ASSERT_TRUE(watcher.process->WaitFor(std::chrono::seconds(30))) << watcher.Out();
  EXPECT_EQ(watcher.process->Wait().exit_code, 0) << watcher.process->StderrTail();
  const std::string watched = watcher.Out();
  absl::StatusOr<v1::GetStudyResponse> study = client_->Get("faults");
  ASSERT_TRUE(study.ok());
  for (const v1::Cell& cell : study->cells()) {
    const std::string ended = cell.id() + "  ";
    size_t count = 0;
    for (size_t at = watched.find(ended); at != std::string::npos;
         at = watched.find(ended, at + 1)) {
      const size_t eol = watched.find('\n', at);
      count += watched.substr(at, eol - at).find("-> succeeded") != std::string::npos;
    }
    EXPECT_EQ(count, 1u) << cell.id() << "\n" << watched;
  }
  EXPECT_THAT(watched, HasSubstr("faults: 4 cells: 4 succeeded"));
  EXPECT_THAT(watcher.process->StderrTail(), HasSubstr("reconnected; resumed after event"));

  // Each trainer's stderr reached the coordinator; a cell is found by a prefix of its id.
  const std::string cell = study->cells(0).id();
  Child logs =
      Start(launcher_, "onset",
            {"logs", cell.substr(0, 6), "--coordinator", address_, "--token-file", token_file_});
  ASSERT_NE(logs.process, nullptr);
  EXPECT_EQ(logs.process->Wait().exit_code, 0) << logs.process->StderrTail();
  EXPECT_THAT(logs.Out(), HasSubstr("onset-train: done"));
  // The latest attempt (a cell whose lease expired during the restart ran twice).
  EXPECT_THAT(logs.process->StderrTail(), HasSubstr("== faults/" + cell + " attempt "));
}

TEST_F(FaultInjectionTest, ASigtermedWorkerHandsItsCellBackWithoutAFailure) {
  const size_t first = StartWorker("w1");
  Submit();
  std::optional<v1::Cell> cell;
  ASSERT_TRUE(WaitUntil([&] { return (cell = RunningCellPast(20'000)).has_value(); }));
  const worker::ExitStatus stopped = workers_[first].process->Terminate(std::chrono::seconds(30));
  EXPECT_TRUE(stopped.Succeeded()) << stopped.ToString() << "\n"
                                   << workers_[first].process->StderrTail();
  // Another machine finishes the study; the handed-back cell resumes from its checkpoint in the
  // shared checkpoint root.
  StartWorker("w2");
  ExpectCompleteAndContinuous();
  bool handed_back = false;
  for (const AttemptRow& a : Attempts(Db())) {
    EXPECT_NE(a.outcome, "failed") << a.cell;
    EXPECT_NE(a.outcome, "lost") << a.cell;
    if (a.cell == cell->id() && a.attempt == 1) {
      handed_back = a.outcome == "handed_back";
    }
  }
  EXPECT_TRUE(handed_back);
  const std::vector<int64_t> resumed = ResumedAt(Db(), cell->id());  // from its checkpoint
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_GE(resumed[0], 16'384);
  absl::StatusOr<v1::GetStudyResponse> s = client_->Get("faults");
  for (const v1::Cell& c : s->cells()) EXPECT_EQ(c.failures(), 0) << c.id();
}

}  // namespace
}  // namespace onset
