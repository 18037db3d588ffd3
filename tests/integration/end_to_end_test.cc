// Runs the built binaries together: onsetd + onset-worker + onset-train driven through the CLI,
// and `onset run` on its own. Skips when a binary is missing from ONSET_BIN_DIR.
#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using testing::PointsPerCell;
using testing::Start;
using testing::WaitForFile;
using worker::ExitStatus;
using worker::PosixProcessLauncher;

constexpr auto kOverallTimeout = std::chrono::minutes(5);
constexpr auto kPollInterval = std::chrono::milliseconds(200);

// Two cells, tiny enough for a couple of seconds of CPU each.
constexpr char kTinyStudy[] = R"(name: tiny
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 2}
data: {}
eval: {every_tokens: 20K, heldout_seqs: 4, niah_lengths: [48, 64], niah_samples: 2}
grid:
  arch: [full, "swa:1"]
  window: [16]
  pos: [rope]
  tokens: [20K]
  seeds: 1
)";

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("onset-e2e-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    study_file_ = dir_ / "tiny.yaml";
    std::ofstream(study_file_) << kTinyStudy;
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  fs::path dir_;
  fs::path study_file_;
  PosixProcessLauncher launcher_;
};

TEST_F(EndToEndTest, DaemonWorkerAndTrainerFinishAStudy) {
  std::string missing;
  if (!HaveBinaries({"onsetd", "onset-worker", "onset-train", "onset"}, &missing)) {
    GTEST_SKIP() << missing << " not built";
  }
  const fs::path db = dir_ / "onset.db";
  // onsetd makes its token next to the database.
  testing::Daemon started =
      testing::StartDaemon(launcher_, dir_, {"--heartbeat-interval-ms", "500"});
  ASSERT_FALSE(started.address.empty() || started.token.empty());
  Child& daemon = started.child;
  const std::string& address = started.address;
  const std::string& token_file = started.token_file;

  // Without the token, or with a wrong one, nothing gets in.
  Child anonymous = Start(launcher_, "onset", {"--coordinator", address, "status"});
  EXPECT_EQ(anonymous.process->Wait().exit_code, 1);
  EXPECT_THAT(anonymous.process->StderrTail(), HasSubstr("missing or wrong token"));
  const fs::path wrong_token_file = dir_ / "wrong.token";
  std::ofstream(wrong_token_file) << std::string(64, 'f') << "\n";
  fs::permissions(wrong_token_file, fs::perms::owner_read | fs::perms::owner_write);
  Child intruder = Start(launcher_, "onset-worker",
                         {"--coordinator", address, "--work-dir", (dir_ / "intruder").string(),
                          "--token-file", wrong_token_file.string()});
  ASSERT_TRUE(intruder.process->WaitFor(std::chrono::seconds(30)));
  EXPECT_EQ(intruder.process->Wait().exit_code, 1);
  EXPECT_THAT(intruder.process->StderrTail(), HasSubstr("missing or wrong token"));

  Child worker = Start(launcher_, "onset-worker",
                       {"--coordinator", address, "--work-dir", (dir_ / "work").string(), "--slots",
                        "2", "--threads-per-job", "1", "--token-file", token_file});
  ASSERT_NE(worker.process, nullptr);

  Child submit =
      Start(launcher_, "onset",
            {"--coordinator", address, "--token-file", token_file, "submit", study_file_.string()});
  ASSERT_NE(submit.process, nullptr);
  ASSERT_TRUE(submit.process->Wait().Succeeded()) << submit.process->StderrTail();
  EXPECT_THAT(submit.Out(), HasSubstr("2 cells, 2 new"));

  cli::StudyClient client(address, common::ClientSecurity{started.token, ""});
  auto deadline = std::chrono::steady_clock::now() + kOverallTimeout;
  int succeeded = 0;
  v1::GetStudyResponse last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto study = client.Get("tiny");
    ASSERT_TRUE(study.ok()) << study.status();
    last = *study;
    succeeded = 0;
    bool failed = false;
    for (const v1::Cell& cell : study->cells()) {
      succeeded += cell.state() == v1::CELL_STATE_SUCCEEDED;
      failed |= cell.state() == v1::CELL_STATE_FAILED;
    }
    ASSERT_FALSE(failed) << last.DebugString() << "\nworker:\n" << worker.process->StderrTail();
    if (succeeded == 2) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  ASSERT_EQ(succeeded, 2) << last.DebugString() << "\nworker:\n" << worker.process->StderrTail();

  // The CLI reads the same state back.
  Child status = Start(launcher_, "onset",
                       {"--coordinator", address, "--token-file", token_file, "status", "tiny"});
  ASSERT_TRUE(status.process->Wait().Succeeded()) << status.process->StderrTail();
  EXPECT_THAT(status.Out(), HasSubstr("tiny: 2 cells: 2 succeeded"));
  Child results = Start(launcher_, "onset",
                        {"--coordinator", address, "--token-file", token_file, "results", "tiny"});
  ASSERT_TRUE(results.process->Wait().Succeeded()) << results.process->StderrTail();
  EXPECT_THAT(results.Out(), HasSubstr("train/loss"));

  // compare, export and plot agree with each other and with the database. With a threshold
  // every loss is below, each cell is past it at its first train/loss point: left-censored, it
  // crossed at or before that point's tokens, a bound and never a number.
  auto run_cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--coordinator", address, "--token-file", token_file});
    Child c = Start(launcher_, "onset", args);
    EXPECT_TRUE(c.process->Wait().Succeeded()) << c.process->StderrTail();
    return c.Out();
  };
  const nlohmann::json compared =
      nlohmann::json::parse(run_cli({"compare", "tiny", "--metric", "train/loss", "--threshold",
                                     "100", "--by", "arch", "--baseline", "arch=full", "--json"}));
  std::map<std::string, std::pair<int64_t, double>> first_and_final;  // cell -> (tokens, value)
  std::map<std::string, int64_t> last_tokens;
  std::istringstream exported(
      run_cli({"export", "tiny", "--format", "jsonl", "--metrics", "train/loss"}));
  for (std::string line; std::getline(exported, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const std::string cell = row["cell_id"];
    const int64_t tokens = row["tokens"];
    auto [it, added] = first_and_final.emplace(cell, std::make_pair(tokens, 0.0));
    if (tokens >= last_tokens[cell]) {
      last_tokens[cell] = tokens;
      it->second.second = row["value"];
    }
    it->second.first = std::min(it->second.first, tokens);
  }
  ASSERT_EQ(compared["groups"].size(), 2u);
  for (const auto& group : compared["groups"]) {
    ASSERT_EQ(group["cells"].size(), 1u);
    const auto& cell = group["cells"][0];
    const std::string id = cell["cell_id"];
    ASSERT_TRUE(first_and_final.count(id)) << id;
    EXPECT_TRUE(cell["crossing"]["tokens"].is_null()) << cell.dump();
    EXPECT_DOUBLE_EQ(cell["crossing"]["censored_below"].get<double>(),
                     static_cast<double>(first_and_final[id].first));
    EXPECT_DOUBLE_EQ(cell["final"].get<double>(), first_and_final[id].second);
    double in_db = 0;
    testing::ForEachRow(db,
                        "SELECT m.value FROM metrics m JOIN cells c ON c.id = m.cell_id WHERE "
                        "c.hash = ? AND m.name = 'train/loss' ORDER BY m.tokens DESC LIMIT 1",
                        {id}, [&](sqlite3_stmt* row) { in_db = sqlite3_column_double(row, 0); });
    EXPECT_DOUBLE_EQ(in_db, first_and_final[id].second);
  }
  // Both sides only bounded from above: either could have been faster.
  EXPECT_EQ(compared["groups"][0]["speed_up"]["kind"], "unknown");
  const fs::path svg = dir_ / "loss.svg";
  run_cli({"plot", "tiny", "--metric", "train/loss", "--by", "arch", "--out", svg.string()});
  std::ifstream svg_in(svg);
  const std::string svg_text((std::istreambuf_iterator<char>(svg_in)), {});
  EXPECT_EQ(svg_text.rfind("<svg", 0), 0u);
  EXPECT_NE(svg_text.find("arch=swa:1"), std::string::npos);

  // Every cell has a loss curve and eval metrics in the database.
  std::map<std::string, int> losses = PointsPerCell(db, "train/loss");
  ASSERT_EQ(losses.size(), 2u);
  for (const auto& [cell, points] : losses) EXPECT_GE(points, 3) << cell;
  EXPECT_EQ(PointsPerCell(db, "eval/heldout_loss").size(), 2u);
  EXPECT_EQ(PointsPerCell(db, "niah/acc").size(), 2u);

  EXPECT_EQ(worker.process->Terminate(std::chrono::seconds(10)).signal, 0)
      << "onset-worker should exit cleanly on SIGTERM:\n"
      << worker.process->StderrTail();
  daemon.process->Terminate(std::chrono::seconds(10));
}

TEST_F(EndToEndTest, OnsetRunCompletesAndResumes) {
  std::string missing;
  if (!HaveBinaries({"onset", "onset-train"}, &missing)) {
    GTEST_SKIP() << missing << " not built";
  }
  const fs::path data = dir_ / "data";
  Child first = Start(launcher_, "onset",
                      {"run", study_file_.string(), "--data-dir", data.string(), "--workers", "2"});
  ASSERT_NE(first.process, nullptr);
  // Bounded: a hung run is killed by its destructor and fails the test.
  ASSERT_TRUE(first.process->WaitFor(
      std::chrono::duration_cast<std::chrono::milliseconds>(kOverallTimeout)));
  ExitStatus status = first.process->Wait();
  ASSERT_TRUE(status.Succeeded()) << status.ToString() << "\n" << first.process->StderrTail();
  EXPECT_THAT(first.Out(), HasSubstr("train/loss"));
  EXPECT_THAT(first.process->StderrTail(), HasSubstr("2 cells, 2 new"));
  EXPECT_FALSE(fs::exists(data / "coordinator.addr"));
  // The run made its token, private to its user, and keeps it for the next run.
  EXPECT_EQ(fs::status(data / common::kTokenFileName).permissions(),
            fs::perms::owner_read | fs::perms::owner_write);

  Child second =
      Start(launcher_, "onset",
            {"run", study_file_.string(), "--data-dir", data.string(), "--workers", "2"});
  ASSERT_TRUE(second.process->WaitFor(std::chrono::seconds(60)));
  status = second.process->Wait();
  ASSERT_TRUE(status.Succeeded()) << status.ToString() << "\n" << second.process->StderrTail();
  EXPECT_THAT(second.process->StderrTail(), HasSubstr("2 cells, 0 new"));
  // Nothing was trained again: one attempt directory per cell.
  int attempts = 0;
  for (const auto& entry : fs::recursive_directory_iterator(data / "work")) {
    attempts += entry.is_directory() && entry.path().filename().string().rfind("attempt-", 0) == 0;
  }
  EXPECT_EQ(attempts, 2);

  // An edited file: the study keeps its earlier cells, but the run follows and reports only
  // the cells of the file it was given.
  std::string edited = kTinyStudy;
  edited.replace(edited.find(R"(arch: [full, "swa:1"])"), 21, "arch: [full]");
  edited.replace(edited.find("tokens: [20K]"), 13, "tokens: [10K]");
  const fs::path edited_file = dir_ / "tiny-edited.yaml";
  std::ofstream(edited_file) << edited;
  Child third = Start(launcher_, "onset",
                      {"run", edited_file.string(), "--data-dir", data.string(), "--workers", "1"});
  ASSERT_TRUE(third.process->WaitFor(
      std::chrono::duration_cast<std::chrono::milliseconds>(kOverallTimeout)));
  status = third.process->Wait();
  ASSERT_TRUE(status.Succeeded()) << status.ToString() << "\n" << third.process->StderrTail();
  EXPECT_THAT(third.process->StderrTail(), HasSubstr("1 cell, 1 new"));
  EXPECT_THAT(third.Out(), HasSubstr("full"));
  EXPECT_THAT(third.Out(), ::testing::Not(HasSubstr("swa:1")));  // key_swap_rate holds "swa"
}

TEST_F(EndToEndTest, StatusFindsARunningOnsetRunWithoutSetUp) {
  std::string missing;
  if (!HaveBinaries({"onset", "onset-train"}, &missing)) {
    GTEST_SKIP() << missing << " not built";
  }
  // Long enough to be still running when `onset status` asks.
  std::string slow = kTinyStudy;
  slow.replace(slow.find("tokens: [20K]"), 13, "tokens: [50M]");
  std::ofstream(study_file_) << slow;
  Child run =
      Start(launcher_, "onset", {"run", study_file_.string(), "--workers", "1"}, dir_.string());
  ASSERT_NE(run.process, nullptr);
  ASSERT_FALSE(WaitForFile(dir_ / "onset-data" / "coordinator.addr").empty())
      << run.process->StderrTail();

  // From the same directory: the address and the token come from ./onset-data.
  Child status = Start(launcher_, "onset", {"status", "tiny"}, dir_.string());
  ASSERT_TRUE(status.process->Wait().Succeeded()) << status.process->StderrTail();
  EXPECT_THAT(status.Out(), HasSubstr("tiny: 2 cells"));

  // A coordinator named explicitly is never sent ./onset-data's token.
  const std::string address = WaitForFile(dir_ / "onset-data" / "coordinator.addr");
  Child named = Start(launcher_, "onset", {"--coordinator", address, "status"}, dir_.string());
  EXPECT_EQ(named.process->Wait().exit_code, 1);
  EXPECT_THAT(named.process->StderrTail(), HasSubstr("missing or wrong token"));

  EXPECT_EQ(run.process->Terminate(std::chrono::seconds(30)).exit_code, 130)  // interrupted
      << run.process->StderrTail();
  EXPECT_THAT(run.process->StderrTail(), HasSubstr("interrupted"));
}

}  // namespace
}  // namespace onset
