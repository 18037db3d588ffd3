// WSD trunk sharing end to end with the real binaries (docs/wsd-trunks.md): a study of three
// budgets runs through onsetd and two workers as one trunk and three branches, and every branch
// cell's metrics and final weights are bitwise those of the same cell trained on its own (the
// same study with train.share_trunk: false, in a second coordinator). The trunk's trainer is
// killed with SIGKILL mid-way and must change nothing. Resubmitting with a fourth, larger budget
// adds only that branch and extends the trunk from its last checkpoint. Skips when a binary is
// missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

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
#include <tuple>
#include <vector>

#include "base/metric_names.h"
#include "cli/client/study_client.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::HaveBinaries;
using testing::Start;
using testing::TrainersOfCell;
using worker::PosixProcessLauncher;

constexpr auto kTimeout = std::chrono::minutes(6);

// 1024 tokens a step; warmup 8000 tokens for every budget; decays over the last 25%. Budgets of
// 32, 64, 128 (and 256) steps: branch points after 24, 48, 96 (and 192) steps. Default eval
// cadence (budget / 4), so each budget evaluates at points of its own and the trunk evaluates at
// their union; the fourth budget's points before the trunk's end (64 steps) are among them, so
// it can join the trunk when it is added later.
std::string StudyFile(const std::string& tokens, bool share) {
  return std::string(R"(name: wsd
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1024, micro_batch: 16, log_every_steps: 4, schedule: wsd,
        decay_fraction: 0.25, warmup_tokens: 8K, checkpoint_every_tokens: 16K, threads: 1)") +
         (share ? "" : ", share_trunk: false") + R"(}
eval: {heldout_seqs: 2, niah_lengths: [64], niah_depths: [0.5], niah_samples: 2}
grid:
  arch: ["swa:1"]
  window: [16]
  tokens: )" +
         tokens + "\n";
}
constexpr char kThreeBudgets[] = "[32768, 65536, 131072]";
constexpr char kFourBudgets[] = "[32768, 65536, 131072, 262144]";

// What a run measured, as opposed to how it ran: timing, checkpoints and resumption differ
// between a branch and the run on its own by design.
bool IsMeasurement(const std::string& name) {
  if (metric::DescribesTheMachine(name)) return false;
  for (const char* how : {"checkpoint/", "resumed_at"}) {
    if (name.find(how) != std::string::npos) return false;
  }
  return true;
}

// (metric, tokens) -> value bits, of one cell.
using Points = std::map<std::pair<std::string, int64_t>, std::string>;

std::map<std::string, Points> MeasurementsByCell(const fs::path& db) {
  std::map<std::string, Points> out;
  testing::ForEachRow(
      db,
      "SELECT c.hash, m.name, m.tokens, quote(m.value) FROM metrics m JOIN "
      "cells c ON c.id = m.cell_id WHERE c.role <> 'trunk'",
      {}, [&](sqlite3_stmt* row) {
        const std::string name = testing::Text(row, 1);
        if (!IsMeasurement(name)) return;
        // quote() writes a REAL with all 17 significant digits: the exact bits.
        out[testing::Text(row, 0)][{name, sqlite3_column_int64(row, 2)}] = testing::Text(row, 3);
      });
  return out;
}

struct Row {
  std::string role, state, trunk;
  int64_t budget = 0, branch_tokens = 0;
  std::string config;
};

std::map<std::string, Row> Cells(const fs::path& db) {
  std::map<std::string, Row> out;
  testing::ForEachRow(
      db,
      "SELECT c.hash, c.role, c.state, COALESCE(t.hash, ''), c.tokens_budget, c.branch_tokens, "
      "c.config_json FROM cells c LEFT JOIN cells t ON t.id = c.trunk_id",
      {}, [&](sqlite3_stmt* row) {
        out[testing::Text(row, 0)] = {testing::Text(row, 1),        testing::Text(row, 2),
                                      testing::Text(row, 3),        sqlite3_column_int64(row, 4),
                                      sqlite3_column_int64(row, 5), testing::Text(row, 6)};
      });
  return out;
}

// One coordinator with two workers and a shared checkpoint root, in its own directory.
class Site {
 public:
  Site(PosixProcessLauncher* launcher, fs::path dir) : launcher_(launcher), dir_(std::move(dir)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    daemon_ = testing::StartDaemon(
        *launcher_, dir_,
        {"--lease-ttl-ms", "4000", "--heartbeat-interval-ms", "300", "--retry-backoff-ms", "200",
         "--checkpoint-root", (dir_ / "checkpoints").string()});
    client_ = std::make_unique<cli::StudyClient>(
        daemon_.address, common::ClientSecurity{daemon_.token, ""}, std::chrono::seconds(5));
    for (const char* name : {"w1", "w2"}) {
      workers_.push_back(
          Start(*launcher_, "onset-worker",
                {"--coordinator", daemon_.address, "--work-dir", (dir_ / name).string(),
                 "--checkpoint-root", (dir_ / "checkpoints").string(), "--slots", "1",
                 "--threads-per-job", "1", "--token-file", daemon_.token_file}));
    }
  }
  ~Site() {
    for (Child& w : workers_) {
      if (w.process) w.process->Terminate(std::chrono::seconds(10));
    }
    if (daemon_.child.process) daemon_.child.process->Terminate(std::chrono::seconds(10));
  }

  const fs::path& dir() const { return dir_; }
  fs::path Db() const { return dir_ / "onset.db"; }
  cli::StudyClient& client() { return *client_; }
  std::string DaemonLog() const { return daemon_.child.process->StderrTail(); }

  absl::StatusOr<v1::SubmitStudyResponse> Submit(const std::string& yaml) {
    return client_->Submit("wsd.yaml", yaml);
  }

  bool WaitUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Every row of the study, trunks included, succeeded.
  bool AllSucceeded() {
    const std::map<std::string, Row> cells = Cells(Db());
    if (cells.empty()) return false;
    for (const auto& [id, row] : cells) {
      if (row.state != "succeeded") return false;
    }
    return true;
  }

  // The final weights of `cell`, exported by onset-train from its newest checkpoint.
  std::string FinalWeights(const std::string& cell, const std::string& config_json) {
    const fs::path config = dir_ / (cell + ".json");
    std::ofstream(config) << config_json;
    const fs::path out = dir_ / ("export-" + cell);
    Child exporter = Start(*launcher_, "onset-train",
                           {"export", "--config", config.string(), "--checkpoint",
                            (dir_ / "checkpoints" / "wsd" / cell).string(), "--out", out.string()});
    const testing::Ran ran = testing::Finish(exporter, std::chrono::minutes(1));
    EXPECT_EQ(ran.code, 0) << ran.err;
    std::ifstream in(out / "model.safetensors", std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }

 private:
  PosixProcessLauncher* launcher_;
  fs::path dir_;
  testing::Daemon daemon_;
  std::vector<Child> workers_;
  std::unique_ptr<cli::StudyClient> client_;
};

class WsdTrunkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing;
    if (!HaveBinaries({"onsetd", "onset-worker", "onset-train"}, &missing)) {
      GTEST_SKIP() << missing << " not built";
    }
    root_ = fs::temp_directory_path() / ("onset-wsd-" + std::to_string(getpid()));
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  // Every branch of `shared` measured what the same cell measured in `alone`, and its final
  // weights are the same bytes.
  void ExpectBranchesEqualRunsOnTheirOwn(Site& shared, Site& alone, size_t branches) {
    const std::map<std::string, Row> cells = Cells(shared.Db());
    const std::map<std::string, Points> with = MeasurementsByCell(shared.Db());
    const std::map<std::string, Points> without = MeasurementsByCell(alone.Db());
    size_t compared = 0;
    for (const auto& [id, row] : cells) {
      if (row.role != "branch") continue;
      ++compared;
      ASSERT_TRUE(with.count(id) && without.count(id)) << id;
      const Points& a = with.at(id);
      const Points& b = without.at(id);
      EXPECT_EQ(a.size(), b.size()) << id;
      for (const auto& [key, value] : b) {
        auto it = a.find(key);
        if (it == a.end()) {
          ADD_FAILURE() << id << ": the branch lacks " << key.first << " at " << key.second;
        } else {
          EXPECT_EQ(it->second, value) << id << ": " << key.first << " at " << key.second;
        }
      }
      for (const auto& [key, value] : a) {
        EXPECT_TRUE(b.count(key)) << id << ": the branch has an extra " << key.first << " at "
                                  << key.second;
      }
      // Curves that prove something: the loss every log_every_steps, evals at the budget's own
      // points, NIAH among them.
      EXPECT_GT(a.count({"niah/acc", row.budget}), 0u) << id;
      EXPECT_EQ(shared.FinalWeights(id, row.config), alone.FinalWeights(id, row.config)) << id;
    }
    EXPECT_EQ(compared, branches);
  }

  fs::path root_;
  PosixProcessLauncher launcher_;
};

TEST_F(WsdTrunkTest, BranchesOfAKilledTrunkEqualRunsOnTheirOwnAndALargerBudgetExtendsIt) {
  Site shared(&launcher_, root_ / "shared");
  Site alone(&launcher_, root_ / "alone");

  absl::StatusOr<v1::SubmitStudyResponse> s = shared.Submit(StudyFile(kThreeBudgets, true));
  ASSERT_TRUE(s.ok()) << s.status();
  // One trunk to 96K, branches of 8K, 16K and 32K: 152K tokens instead of 224K.
  EXPECT_EQ(s->tokens_to_train(), 96 * 1024 + 8 * 1024 + 16 * 1024 + 32 * 1024);
  EXPECT_EQ(s->tokens_without_sharing(), 224 * 1024);
  EXPECT_THAT(s->sharing_notes(), ::testing::IsEmpty());
  absl::StatusOr<v1::SubmitStudyResponse> a = alone.Submit(StudyFile(kFourBudgets, false));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->tokens_to_train(), a->tokens_without_sharing());

  std::string trunk;
  for (const auto& [id, row] : Cells(shared.Db())) {
    if (row.role == "trunk") trunk = id;
  }
  ASSERT_FALSE(trunk.empty());
  // Kill the trunk's trainer mid-way, after a checkpoint and before its last branch point.
  ASSERT_TRUE(shared.WaitUntil([&] {
    bool past = false;
    testing::ForEachRow(shared.Db(), "SELECT tokens_done FROM cells WHERE hash = ?", {trunk},
                        [&](sqlite3_stmt* row) { past = sqlite3_column_int64(row, 0) >= 30'000; });
    return past;
  })) << shared.DaemonLog();
  std::vector<pid_t> pids = TrainersOfCell(shared.dir().string(), trunk);
  ASSERT_EQ(pids.size(), 1u);
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);

  ASSERT_TRUE(shared.WaitUntil([&] { return shared.AllSucceeded(); })) << shared.DaemonLog();
  ASSERT_TRUE(alone.WaitUntil([&] { return alone.AllSucceeded(); })) << alone.DaemonLog();
  // The trunk was retried and resumed from a checkpoint; its branches each ran once.
  int trunk_attempts = 0;
  testing::ForEachRow(shared.Db(),
                      "SELECT COUNT(*) FROM attempts a JOIN cells c ON c.id = a.cell_id WHERE "
                      "c.hash = ?",
                      {trunk},
                      [&](sqlite3_stmt* row) { trunk_attempts = sqlite3_column_int(row, 0); });
  EXPECT_EQ(trunk_attempts, 2);
  ExpectBranchesEqualRunsOnTheirOwn(shared, alone, 3);

  // One more, larger budget: only its branch is new, and the trunk goes on from its end.
  absl::StatusOr<v1::SubmitStudyResponse> more = shared.Submit(StudyFile(kFourBudgets, true));
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(more->cells_added(), 1);
  EXPECT_THAT(more->sharing_notes(), ::testing::IsEmpty());
  const std::map<std::string, Row> cells = Cells(shared.Db());
  EXPECT_EQ(cells.at(trunk).budget, 192 * 1024);
  int branches = 0;
  for (const auto& [id, row] : cells) {
    if (row.role == "branch") {
      ++branches;
      EXPECT_EQ(row.trunk, trunk);
    }
  }
  EXPECT_EQ(branches, 4);
  ASSERT_TRUE(shared.WaitUntil([&] { return shared.AllSucceeded(); })) << shared.DaemonLog();
  // The extension resumed the trunk at its old end, 96K tokens.
  std::vector<int64_t> resumed;
  testing::ForEachRow(shared.Db(),
                      "SELECT m.tokens FROM metrics m JOIN cells c ON c.id = m.cell_id WHERE "
                      "c.hash = ? AND m.name = 'train/resumed_at_tokens' ORDER BY m.tokens",
                      {trunk},
                      [&](sqlite3_stmt* row) { resumed.push_back(sqlite3_column_int64(row, 0)); });
  EXPECT_THAT(resumed, ::testing::Contains(96 * 1024));
  ExpectBranchesEqualRunsOnTheirOwn(shared, alone, 4);
}

}  // namespace
}  // namespace onset
