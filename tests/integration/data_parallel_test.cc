// A cell that needs two devices, run by the real onsetd, onset-worker and onset-train: the worker
// offers two CPU slots and the trainer runs two Gloo ranks on them. Skips when a binary is
// missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::ForEachRow;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using testing::Start;
using testing::Text;
using testing::WaitForFile;
using worker::PosixProcessLauncher;

constexpr auto kOverallTimeout = std::chrono::minutes(5);

// One cell, tiny enough for a few seconds of CPU, on two devices.
constexpr char kPairStudy[] = R"(name: pair
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 4}
data: {}
eval: {every_tokens: 20K, heldout_seqs: 4, niah_lengths: [48, 64], niah_samples: 2}
resources: {devices: 2}
grid:
  arch: [full]
  tokens: [16K]
)";

class DataParallelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("onset-dp-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  fs::path dir_;
  PosixProcessLauncher launcher_;
};

TEST_F(DataParallelTest, AWorkerWithTwoCpuSlotsRunsACellOfTwoRanks) {
  std::string missing;
  if (!HaveBinaries({"onsetd", "onset-worker", "onset-train", "onset"}, &missing)) {
    GTEST_SKIP() << missing << " not built";
  }
  const fs::path db = dir_ / "onset.db";
  testing::Daemon started =
      testing::StartDaemon(launcher_, dir_, {"--heartbeat-interval-ms", "500"});
  ASSERT_FALSE(started.address.empty() || started.token.empty());
  Child& daemon = started.child;
  const std::string& address = started.address;
  const std::string& token_file = started.token_file;

  const fs::path study_file = dir_ / "pair.yaml";
  std::ofstream(study_file) << kPairStudy;
  Child submit =
      Start(launcher_, "onset",
            {"--coordinator", address, "--token-file", token_file, "submit", study_file.string()});
  ASSERT_TRUE(submit.process->Wait().Succeeded()) << submit.process->StderrTail();

  // With only a one-slot worker registered, the cell waits, and says why.
  Child small = Start(launcher_, "onset-worker",
                      {"--coordinator", address, "--work-dir", (dir_ / "small").string(), "--slots",
                       "1", "--token-file", token_file});
  cli::StudyClient client(address, common::ClientSecurity{started.token, ""});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string waiting;
  while (waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<v1::GetStudyResponse> study = client.Get("pair");
    ASSERT_TRUE(study.ok()) << study.status();
    waiting = study->study().waiting();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(waiting, "1 queued cell needs 2 devices; the largest registered worker has 1");
  Child status = Start(launcher_, "onset",
                       {"--coordinator", address, "--token-file", token_file, "status", "pair"});
  ASSERT_TRUE(status.process->Wait().Succeeded()) << status.process->StderrTail();
  EXPECT_THAT(status.Out(), HasSubstr("waiting: 1 queued cell needs 2 devices"));
  EXPECT_EQ(small.process->Terminate(std::chrono::seconds(10)).signal, 0);

  Child worker =
      Start(launcher_, "onset-worker",
            {"--coordinator", address, "--work-dir", (dir_ / "work").string(), "--devices", "cpu:2",
             "--threads-per-job", "2", "--token-file", token_file});
  ASSERT_NE(worker.process, nullptr);

  deadline = std::chrono::steady_clock::now() + kOverallTimeout;
  v1::GetStudyResponse last;
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<v1::GetStudyResponse> study = client.Get("pair");
    ASSERT_TRUE(study.ok()) << study.status();
    last = *study;
    ASSERT_EQ(last.cells_size(), 1);
    ASSERT_NE(last.cells(0).state(), v1::CELL_STATE_FAILED) << last.DebugString() << "\nworker:\n"
                                                            << worker.process->StderrTail();
    if (last.cells(0).state() == v1::CELL_STATE_SUCCEEDED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(last.cells(0).state(), v1::CELL_STATE_SUCCEEDED) << last.DebugString() << "\nworker:\n"
                                                             << worker.process->StderrTail();
  EXPECT_EQ(last.cells(0).devices(), 2);
  EXPECT_EQ(last.study().waiting(), "");

  // The attempt ran on both slots, as two ranks of one trainer.
  int attempts = 0;
  ForEachRow(db,
             "SELECT a.devices, a.stderr_tail, a.outcome FROM attempts a JOIN cells c ON "
             "c.id = a.cell_id WHERE c.hash = ?",
             {last.cells(0).id()}, [&](sqlite3_stmt* row) {
               ++attempts;
               EXPECT_EQ(Text(row, 0), "cpu:0,cpu:1");
               EXPECT_THAT(Text(row, 1), HasSubstr("data parallel over 2 ranks"));
               EXPECT_EQ(Text(row, 2), "succeeded");
             });
  EXPECT_EQ(attempts, 1);
  EXPECT_THAT(worker.process->StderrTail(), HasSubstr("on cpu:0,cpu:1 (--device cpu --nproc 2)"));

  Child workers =
      Start(launcher_, "onset", {"--coordinator", address, "--token-file", token_file, "workers"});
  ASSERT_TRUE(workers.process->Wait().Succeeded()) << workers.process->StderrTail();
  EXPECT_THAT(workers.Out(), HasSubstr("cpu:0,1"));

  EXPECT_EQ(worker.process->Terminate(std::chrono::seconds(10)).signal, 0)
      << worker.process->StderrTail();
  daemon.process->Terminate(std::chrono::seconds(10));
}

TEST_F(DataParallelTest, OnsetRunRefusesCellsNeedingMoreSlotsThanItHas) {
  std::string missing;
  if (!HaveBinaries({"onset", "onset-train"}, &missing)) GTEST_SKIP() << missing << " not built";
  const fs::path study_file = dir_ / "pair.yaml";
  std::ofstream(study_file) << kPairStudy;
  Child run =
      Start(launcher_, "onset",
            {"run", study_file.string(), "--data-dir", (dir_ / "data").string(), "--workers", "1"});
  ASSERT_TRUE(run.process->WaitFor(std::chrono::seconds(60))) << run.process->StderrTail();
  EXPECT_EQ(run.process->Wait().exit_code, 2);
  EXPECT_THAT(run.process->StderrTail(),
              HasSubstr("cells of pair need 2 devices each; run them with --workers 2 or more"));
}

}  // namespace
}  // namespace onset
