// deploy/slurm/onset-worker.sbatch and `onset slurm up` on a real Slurm (a single-node cluster on
// loopback, tests/slurm/cluster.sh) against the real onsetd, onset-worker and onset-train: an
// array of workers runs a study to the end; a worker job that Slurm signals (scancel, requeue,
// its time limit) hands its cell back with no failure counted, and the cell resumes from its
// checkpoint in the next job; workers that `onset slurm up` starts leave the queue empty once the
// study is done. The workers offer CPU slots (ONSET_DEVICES=cpu), so no GPU is needed. Skips,
// saying why, where Slurm cannot start or a binary is missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/client/study_client.h"
#include "tests/integration/harness.h"
#include "tests/slurm/slurm_cluster.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::SlurmCluster;
using worker::PosixProcessLauncher;

constexpr auto kTimeout = std::chrono::minutes(4);

// One cell of TOKENS tokens in steps of 1024 (some 10 ms each on one CPU thread), a checkpoint
// every 32 steps: long enough to be signalled mid-run and to resume from a checkpoint.
constexpr char kLongCell[] = R"(name: NAME
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1024, micro_batch: 16, log_every_steps: 8, checkpoint_every_tokens: 32768,
        keep_checkpoints: 2}
eval: {every_tokens: 512K, heldout_seqs: 2, niah_lengths: [64], niah_depths: [0.5], niah_samples: 1}
grid:
  arch: [full]
  window: [16]
  tokens: [TOKENS]
  seeds: 1
)";
constexpr char kMillion[] = "1048576";

// Four short cells (128 steps each).
constexpr char kFourCells[] = R"(name: NAME
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1024, micro_batch: 16, log_every_steps: 8, checkpoint_every_tokens: 65536}
eval: {every_tokens: 64K, heldout_seqs: 2, niah_lengths: [64], niah_depths: [0.5], niah_samples: 1}
grid:
  arch: [full, "swa:1"]
  window: [16]
  tokens: [131072]
  seeds: 2
)";

std::string Named(const char* study, const std::string& name, const std::string& tokens) {
  std::string text = study;
  text.replace(text.find("NAME"), 4, name);
  if (const size_t at = text.find("TOKENS"); at != std::string::npos) text.replace(at, 6, tokens);
  return text;
}

struct AttemptRow {
  int attempt = 0;
  std::string outcome;
};

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing;
    if (!testing::HaveBinaries({"onsetd", "onset-worker", "onset-train", "onset"}, &missing)) {
      GTEST_SKIP() << missing << " not built";
    }
    dir_ = fs::temp_directory_path() /
           absl::StrCat("onset-slurm-", getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::string skip;
    cluster_ = SlurmCluster::Start(&skip);
    if (cluster_ == nullptr) {
      if (HasFailure()) return;
      GTEST_SKIP() << skip;
    }
    daemon_ = testing::StartDaemon(
        launcher_, dir_,
        {"--lease-ttl-ms", "4000", "--heartbeat-interval-ms", "300", "--retry-backoff-ms", "200",
         "--checkpoint-root", (dir_ / "checkpoints").string()});
    ASSERT_FALSE(daemon_.token.empty());
    client_ = std::make_unique<cli::StudyClient>(
        daemon_.address, common::ClientSecurity{daemon_.token, ""}, std::chrono::seconds(5));
  }

  void TearDown() override {
    if (HasFailure()) {
      for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
        if (e.path().extension() != ".out") continue;
        std::ifstream in(e.path());
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        ADD_FAILURE() << e.path().filename() << ":\n"
                      << text.substr(text.size() > 6000 ? text.size() - 6000 : 0);
      }
      if (cluster_ != nullptr) ADD_FAILURE() << "queue: " << cluster_->ShowJob("");
    }
    cluster_.reset();  // its jobs (and their workers) first
    if (daemon_.child.process) daemon_.child.process->Terminate(std::chrono::seconds(10));
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // What the job script reads: this coordinator, its token, the built binaries, CPU slots.
  std::map<std::string, std::string> WorkerEnv() const {
    return {{"ONSET_COORDINATOR", daemon_.address},
            {"ONSET_TOKEN_FILE", daemon_.token_file},
            {"ONSET_BIN", testing::BinDir()},
            {"ONSET_WORK_DIR", (dir_ / "work").string()},
            {"ONSET_CHECKPOINT_ROOT", (dir_ / "checkpoints").string()},
            {"ONSET_DEVICES", "cpu"},
            {"ONSET_STOP_GRACE", "20"}};
  }

  static std::string Script() {
    return std::string(ONSET_SOURCE_DIR) + "/deploy/slurm/onset-worker.sbatch";
  }

  // sbatch of the job script with one CPU and no GPU (its #SBATCH lines ask for GPUs and 32
  // CPUs), its output in the test's directory, plus `extra`; the job id.
  std::string SubmitWorkers(std::vector<std::string> extra,
                            std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {"--gres=none", "--cpus-per-task=1",
                                     "--output=" + (dir_ / "worker-%A_%a.out").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(Script());
    std::map<std::string, std::string> all = WorkerEnv();
    for (auto& [k, v] : env) all[k] = v;
    return cluster_->Sbatch(args, all);
  }

  void Submit(const char* study, const std::string& name, const std::string& tokens = kMillion) {
    absl::StatusOr<v1::SubmitStudyResponse> r =
        client_->Submit(name + ".yaml", Named(study, name, tokens));
    ASSERT_TRUE(r.ok()) << r.status();
  }

  bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = kTimeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  std::optional<v1::Cell> OnlyCell(const std::string& study) {
    absl::StatusOr<v1::GetStudyResponse> s = client_->Get(study);
    if (!s.ok() || s->cells_size() != 1) return std::nullopt;
    return s->cells(0);
  }

  int Succeeded(const std::string& study) {
    absl::StatusOr<v1::GetStudyResponse> s = client_->Get(study);
    if (!s.ok()) return -1;
    auto it = s->study().cells_by_state().find("succeeded");
    return it == s->study().cells_by_state().end() ? 0 : it->second;
  }

  // Waits until the study's one cell runs past two checkpoints.
  v1::Cell RunningPastACheckpoint(const std::string& study) {
    std::optional<v1::Cell> cell;
    EXPECT_TRUE(WaitUntil([&] {
      cell = OnlyCell(study);
      return cell && cell->state() == v1::CELL_STATE_RUNNING && cell->tokens_done() >= 70'000;
    })) << (cell ? cell->DebugString() : "no cell");
    return cell.value_or(v1::Cell());
  }

  bool JobLeftTheQueue(const std::string& job) {
    return WaitUntil([&] {
      for (const auto& [id, state] : cluster_->Queue()) {
        if (id == job || id.rfind(job + "_", 0) == 0) return false;
      }
      return true;
    });
  }

  std::vector<AttemptRow> Attempts(const std::string& cell) {
    std::vector<AttemptRow> rows;
    testing::ForEachRow(dir_ / "onset.db",
                        "SELECT a.attempt, COALESCE(a.outcome, '') FROM attempts a JOIN cells c "
                        "ON c.id = a.cell_id WHERE c.hash = ? ORDER BY a.attempt",
                        {cell}, [&](sqlite3_stmt* row) {
                          rows.push_back({sqlite3_column_int(row, 0), testing::Text(row, 1)});
                        });
    return rows;
  }

  // The study's one cell was handed back by its first attempt, counted no failure, and its
  // second attempt resumed from a checkpoint and finished it.
  void ExpectHandedBackAndResumed(const std::string& study) {
    ASSERT_TRUE(WaitUntil([&] { return Succeeded(study) == 1; }))
        << client_->Get(study)->DebugString();
    const v1::Cell cell = OnlyCell(study).value();
    EXPECT_EQ(cell.failures(), 0);
    const std::vector<AttemptRow> attempts = Attempts(cell.id());
    ASSERT_EQ(attempts.size(), 2u);
    EXPECT_EQ(attempts[0].outcome, "handed_back");
    EXPECT_EQ(attempts[1].outcome, "succeeded");
    const std::vector<int64_t> resumed = testing::ResumedAt(dir_ / "onset.db", cell.id());
    ASSERT_EQ(resumed.size(), 1u);
    EXPECT_GE(resumed[0], 65'536);
  }

  // `onset ARGS --coordinator ... --token-file ...` with SLURM_CONF set: how it ended.
  testing::Ran Onset(std::vector<std::string> args) {
    args.insert(args.end(), {"--coordinator", daemon_.address, "--token-file", daemon_.token_file});
    testing::Child child =
        testing::Start(launcher_, "onset", std::move(args), "",
                       {{"SLURM_CONF", cluster_->conf()},
                        {"ONSET_CHECKPOINT_ROOT", (dir_ / "checkpoints").string()}});
    return testing::Finish(child, std::chrono::minutes(1));
  }

  fs::path dir_;
  PosixProcessLauncher launcher_;
  std::unique_ptr<SlurmCluster> cluster_;
  testing::Daemon daemon_;
  std::unique_ptr<cli::StudyClient> client_;
};

TEST_F(SlurmTest, AnArrayOfWorkersRunsAStudyToTheEndAndExitsWhenIdle) {
  Submit(kFourCells, "array");
  const std::string job = SubmitWorkers({"--array=0-1"}, {{"ONSET_EXIT_WHEN_IDLE", "3"}});
  ASSERT_FALSE(job.empty());
  // Both elements run at once (one CPU each) and register with their Slurm job ids.
  ASSERT_TRUE(WaitUntil([&] {
    absl::StatusOr<v1::ListWorkersResponse> w = client_->Workers();
    return w.ok() && w->workers_size() == 2;
  }));
  std::vector<std::string> slurm_jobs;
  absl::StatusOr<v1::ListWorkersResponse> workers = client_->Workers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  for (const v1::Worker& w : workers->workers()) slurm_jobs.push_back(w.slurm_job());
  EXPECT_THAT(slurm_jobs, ::testing::UnorderedElementsAre(job + "_0", job + "_1"));

  ASSERT_TRUE(WaitUntil([&] { return Succeeded("array") == 4; }))
      << client_->Get("array")->DebugString();
  // With nothing left to do, each worker exits after 3 s and its job ends.
  ASSERT_TRUE(JobLeftTheQueue(job));
  const std::vector<testing::EndedJob> ended = cluster_->Ended();
  // They said they exit: none is live, both are kept.
  absl::StatusOr<v1::ListWorkersResponse> live = client_->Workers();
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(live->workers_size(), 0);
  EXPECT_EQ(live->not_live(), 2);
  absl::StatusOr<v1::ListWorkersResponse> all = client_->Workers(/*all=*/true);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->workers_size(), 2);
  for (const v1::Worker& w : all->workers()) EXPECT_GT(w.exited_unix_ms(), 0) << w.id();
  ASSERT_EQ(ended.size(), 2u);
  for (const testing::EndedJob& e : ended) {
    EXPECT_EQ(e.state, "COMPLETED") << e.id;
    EXPECT_EQ(e.exit_code, "0:0") << e.id;
  }
  absl::StatusOr<v1::GetStudyResponse> s = client_->Get("array");
  for (const v1::Cell& c : s->cells()) EXPECT_EQ(c.failures(), 0) << c.id();
}

TEST_F(SlurmTest, ScancelTermHandsTheCellBackAndTheNextJobResumesIt) {
  Submit(kLongCell, "scancel");
  const std::string first = SubmitWorkers({});
  ASSERT_FALSE(first.empty());
  RunningPastACheckpoint("scancel");
  // --full: Slurm signals the job script and every process of the job (without it, only the
  // job's steps, and a batch job of one worker has none).
  const testing::Ran ran = cluster_->Command("scancel", {"--signal=TERM", "--full", first});
  ASSERT_EQ(ran.code, 0) << ran.err;
  ASSERT_TRUE(JobLeftTheQueue(first));
  // Handed back: queued again at once, no failure counted.
  const v1::Cell back = OnlyCell("scancel").value();
  EXPECT_EQ(back.state(), v1::CELL_STATE_QUEUED) << back.DebugString();
  EXPECT_EQ(back.failures(), 0);
  ASSERT_EQ(cluster_->Ended().size(), 1u);
  EXPECT_EQ(cluster_->Ended()[0].exit_code, "0:0");  // the worker stopped cleanly

  ASSERT_FALSE(SubmitWorkers({}).empty());
  ExpectHandedBackAndResumed("scancel");
}

TEST_F(SlurmTest, ARequeuedJobHandsTheCellBackAndResumesItWhenSlurmStartsItAgain) {
  Submit(kLongCell, "requeue");
  const std::string job = SubmitWorkers({});  // the script asks for --requeue
  ASSERT_FALSE(job.empty());
  RunningPastACheckpoint("requeue");
  const testing::Ran ran = cluster_->Command("scontrol", {"requeue", job});
  ASSERT_EQ(ran.code, 0) << ran.err;
  // The same job runs again (cluster.sh: 10 s after it ended) and its new worker finishes the
  // cell from its checkpoint.
  ExpectHandedBackAndResumed("requeue");
  EXPECT_THAT(cluster_->ShowJob(job), HasSubstr("Restarts=1"));
}

TEST_F(SlurmTest, AJobAtItsTimeLimitHandsTheCellBackWithinItsSignalWarning) {
  // Slurm checks time limits every 30 s, so the signal may come that long after the limit is
  // lowered: a cell of 8M tokens (some 80 s) is still running then.
  Submit(kLongCell, "timelimit", "8388608");
  // SIGTERM to the job script 50 s before the limit (Slurm may send it up to a minute early).
  const std::string first = SubmitWorkers({"--time=10", "--signal=B:TERM@50"});
  ASSERT_FALSE(first.empty());
  RunningPastACheckpoint("timelimit");
  // The job has run less than a minute: a one-minute limit puts it inside its warning now.
  const testing::Ran ran =
      cluster_->Command("scontrol", {"update", "JobId=" + first, "TimeLimit=1"});
  ASSERT_EQ(ran.code, 0) << ran.err;
  ASSERT_TRUE(JobLeftTheQueue(first));
  // The worker stopped and the job ended before its limit: COMPLETED, not TIMEOUT.
  ASSERT_EQ(cluster_->Ended().size(), 1u);
  EXPECT_EQ(cluster_->Ended()[0].state, "COMPLETED");
  EXPECT_EQ(OnlyCell("timelimit")->failures(), 0);

  ASSERT_FALSE(SubmitWorkers({}).empty());
  ExpectHandedBackAndResumed("timelimit");
}

TEST_F(SlurmTest, SlurmUpStartsWorkersForAStudyAndNoneIsLeftWhenItEnds) {
  Submit(kFourCells, "up");
  const testing::Ran up =
      Onset({"slurm", "up", "up", "--cpu", "--allow-loopback", "--max-jobs", "3",
             "--exit-when-idle", "3", "--script", Script(), "--sbatch-arg=--cpus-per-task=1",
             "--sbatch-arg=--output=" + (dir_ / "worker-%A_%a.out").string()});
  ASSERT_EQ(up.code, 0) << up.out << up.err;
  EXPECT_THAT(up.out, HasSubstr("3 workers for 4 queued cells"));
  ASSERT_TRUE(WaitUntil([&] { return Succeeded("up") == 4; })) << client_->Get("up")->DebugString();
  // Every worker job ends by itself once the study is done: the queue is empty.
  ASSERT_TRUE(WaitUntil([&] { return cluster_->Queue().empty(); }));
  const std::vector<testing::EndedJob> ended = cluster_->Ended();
  EXPECT_EQ(ended.size(), 3u);
  for (const testing::EndedJob& e : ended) {
    EXPECT_EQ(e.state, "COMPLETED") << e.id;
    EXPECT_EQ(e.name, "onset-up") << e.id;
  }
}

}  // namespace
}  // namespace onset
