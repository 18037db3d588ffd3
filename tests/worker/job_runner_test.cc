#include "worker/job_runner.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "common/utf8.h"
#include "tests/testing/temp_dir.h"
#include "tests/worker/fake_coordinator_client.h"
#include "worker/trainer_lock.h"

namespace onset::worker {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kFakeTrainer[] = ONSET_WORKER_TESTDATA "/fake_trainer.sh";

class JobRunnerTest : public ::testing::Test {
 protected:
  JobRunnerConfig Config() const {
    JobRunnerConfig config;
    config.trainer_path = kFakeTrainer;
    config.work_dir = work_dir_.string();
    config.threads = 2;
    config.heartbeat_interval = std::chrono::milliseconds(50);
    config.flush_interval = std::chrono::milliseconds(50);
    config.terminate_grace = std::chrono::seconds(5);
    return config;
  }

  static JobSpec Job(const std::string& mode) {
    JobSpec job;
    job.lease_id = "lease-1";
    job.study = "demo";
    job.cell_id = "00c0ffee";
    job.attempt = 2;
    job.config_json = mode + " {\"model\":{}}";
    job.tokens_budget = 200;
    return job;
  }

  std::vector<MetricPoint> AllPoints() {
    return client_.Locked([&] {
      std::vector<MetricPoint> all;
      for (const auto& batch : client_.batches) all.insert(all.end(), batch.begin(), batch.end());
      return all;
    });
  }

  testutil::TempDir tmp_;
  fs::path work_dir_ = fs::path(tmp_.path()) / "work";  // made by the code under test
  FakeCoordinatorClient client_;
  PosixProcessLauncher launcher_;
};

TEST_F(JobRunnerTest, SuccessRelaysMetricsAndReportsSucceeded) {
  JobRunner runner(Config(), "w1", Job("success"), &client_, &launcher_);
  JobRunOutcome outcome = runner.Run();

  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_EQ(client_.finished[0].lease_id, "lease-1");
  EXPECT_TRUE(client_.finished[0].result.succeeded());
  EXPECT_EQ(client_.finished[0].result.exit_code, 0);

  std::vector<MetricPoint> points = AllPoints();
  EXPECT_THAT(points, Contains(MetricPoint{"train/loss", 100, 3.5}));
  EXPECT_THAT(points, Contains(MetricPoint{"train/loss", 200, 3.0}));
  EXPECT_THAT(points, Contains(MetricPoint{"eval/heldout_loss", 200, 2.9}));
  EXPECT_THAT(points, Contains(MetricPoint{"niah/acc", 200, 0.25}));
  EXPECT_THAT(points, Not(Contains(MetricPoint{"train/lr", 200, 0})));
  EXPECT_EQ(points.size(), 9u);  // 3 + 3 + 2 + 1: the null a NaN point; the bad line skipped

  // The config was written verbatim where the trainer ran, with the thread count passed on.
  fs::path attempt = work_dir_ / "00c0ffee" / "attempt-2";
  std::ifstream config(attempt / "config.json");
  std::stringstream text;
  text << config.rdbuf();
  EXPECT_EQ(text.str(), "success {\"model\":{}}");
  EXPECT_THAT(outcome.result.stderr_tail, HasSubstr("threads=2"));
  EXPECT_THAT(outcome.result.stderr_tail, HasSubstr("cwd=" + fs::canonical(attempt).string()));
  // Each attempt writes its checkpoints into a directory of its own, resumes nothing it was not
  // named, and is handed the supervisor pipe.
  EXPECT_THAT(outcome.result.stderr_tail,
              HasSubstr("checkpoint_dir=" + (fs::canonical(attempt) / "checkpoints").string() +
                        " resume=0"));
  EXPECT_THAT(outcome.result.stderr_tail, HasSubstr("resume_from=[] supervisor_fd=4"));
}

// The fake trainer echoes its --device, --nproc and CUDA_VISIBLE_DEVICES ("unset" without it).
std::string Launched(const JobRunOutcome& outcome) {
  const std::string& tail = outcome.result.stderr_tail;
  const size_t at = tail.find("device=");
  return at == std::string::npos ? "" : tail.substr(at, tail.find('\n', at) - at);
}

TEST_F(JobRunnerTest, AnEndTheCoordinatorFailedToWriteIsReportedAgain) {
  // The coordinator's database refused the write once (a full disk, an I/O error): the end is
  // sent again rather than lost to an expiring lease and a needless rerun.
  client_.finish_failures = 2;
  client_.finish_failure = absl::InternalError("database write failed: disk I/O error (onset.db)");
  JobRunOutcome outcome = JobRunner(Config(), "w1", Job("success"), &client_, &launcher_).Run();
  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  EXPECT_TRUE(outcome.finish_status.ok()) << outcome.finish_status;
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_TRUE(client_.finished[0].result.succeeded());
}

TEST_F(JobRunnerTest, AnEndRefusedForGoodIsNotReportedAgain) {
  client_.finish_failures = 1;
  client_.finish_failure = absl::FailedPreconditionError("FinishJob: lease expired");
  JobRunOutcome outcome = JobRunner(Config(), "w1", Job("success"), &client_, &launcher_).Run();
  EXPECT_EQ(outcome.finish_status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(client_.finished.empty());
}

TEST_F(JobRunnerTest, AJobOnGpusSeesOnlyThemWithARankOnEach) {
  JobSpec job = Job("success");
  job.devices = {"cuda:3", "cuda:1"};
  JobRunOutcome outcome = JobRunner(Config(), "w1", job, &client_, &launcher_).Run();
  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  EXPECT_EQ(Launched(outcome), "device=cuda nproc=2 cuda_visible_devices=3,1.");
  EXPECT_THAT(outcome.result.stderr_tail, HasSubstr("threads=2 "));  // --threads-per-job as is

  job.devices = {"cuda:2"};
  outcome = JobRunner(Config(), "w1", job, &client_, &launcher_).Run();
  EXPECT_EQ(Launched(outcome), "device=cuda nproc= cuda_visible_devices=2.");
}

TEST_F(JobRunnerTest, AJobOnCpuSlotsSeesNoGpu) {
  JobSpec job = Job("success");
  job.devices = {"cpu:0", "cpu:1"};
  JobRunOutcome outcome = JobRunner(Config(), "w1", job, &client_, &launcher_).Run();
  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  EXPECT_EQ(Launched(outcome), "device=cpu nproc=2 cuda_visible_devices=.");
  EXPECT_THAT(outcome.result.stderr_tail, HasSubstr("threads=2 "));
}

TEST_F(JobRunnerTest, AJobWithoutDevicesLeavesTheChoiceToTheTrainer) {
  JobRunOutcome outcome = JobRunner(Config(), "w1", Job("success"), &client_, &launcher_).Run();
  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  EXPECT_THAT(Launched(outcome), StartsWith("device= nproc= "));
}

TEST_F(JobRunnerTest, DevicesItCannotRunOnFailTheJobBeforeTheTrainerStarts) {
  JobSpec job = Job("success");
  job.devices = {"cuda:0", "cpu:1"};
  JobRunOutcome outcome = JobRunner(Config(), "w1", job, &client_, &launcher_).Run();
  EXPECT_EQ(outcome.end, JobEnd::kFailed);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_THAT(client_.finished[0].result.reason,
              StartsWith("cannot run on the devices the coordinator gave (cuda:0,cpu:1): "));
  EXPECT_EQ(outcome.result.stderr_tail, "");
  EXPECT_FALSE(fs::exists(work_dir_ / "00c0ffee"));
}

TEST_F(JobRunnerTest, MetricsAreBatched) {
  JobRunnerConfig config = Config();
  config.flush_points = 500;
  config.flush_interval = std::chrono::seconds(60);
  JobRunner runner(config, "w1", Job("many"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kSucceeded);

  ASSERT_GE(client_.batches.size(), 3u);
  size_t total = 0;
  for (const auto& batch : client_.batches) {
    EXPECT_LE(batch.size(), 500u);
    total += batch.size();
  }
  EXPECT_EQ(total, 1200u);
  EXPECT_EQ(AllPoints().back(), (MetricPoint{"train/loss", 1200, 1.5}));
}

TEST_F(JobRunnerTest, ARefusedBatchIsDroppedAndSaidSoNotResentForever) {
  client_.report_status = absl::InvalidArgumentError("ReportMetrics to fake: bad points");
  JobRunnerConfig config = Config();
  config.report_deadline = std::chrono::seconds(2);  // the old loop resent until this ended
  JobRunner runner(config, "w1", Job("many"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kSucceeded);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_TRUE(client_.finished[0].result.succeeded());
  // Each point was offered once.
  size_t offered = 0;
  for (const auto& batch : client_.batches) offered += batch.size();
  EXPECT_EQ(offered, 1200u);
  std::vector<LogLine> lines = client_.Locked([&] { return client_.log_lines; });
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().text,
            "onset-worker: the coordinator refused 1200 metric points: first: ReportMetrics to "
            "fake: bad points");
}

TEST_F(JobRunnerTest, BadMetricPointsAreDroppedAloneAndTheLogSaysSo) {
  JobRunner runner(Config(), "w1", Job("bad_metrics"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kSucceeded);
  EXPECT_THAT(AllPoints(), ::testing::ElementsAre(MetricPoint{"train/loss", 100, 3.5},
                                                  MetricPoint{"train/loss", 200, 3.0}));
  std::vector<std::string> texts;
  for (const LogLine& line : client_.Locked([&] { return client_.log_lines; })) {
    texts.push_back(line.text);
  }
  EXPECT_THAT(texts, Contains("onset-worker: dropped a metric point: tokens -1: must be "
                              "0..1000000000000000 (later ones are counted, the total comes "
                              "when the attempt ends)"));
  EXPECT_EQ(texts.back(),
            "onset-worker: dropped 3 metric points: first: tokens -1: must be 0..1000000000000000");
  for (const Progress& p : client_.Locked([&] { return client_.heartbeats; })) {
    EXPECT_GE(p.tokens_done, 0);
    EXPECT_LE(p.tokens_done, 200);
  }
}

TEST_F(JobRunnerTest, HeartbeatsGoOnWhileTheLastPointsWaitForTheCoordinator) {
  client_.report_failures = 3;
  JobRunnerConfig config = Config();
  config.flush_interval = std::chrono::seconds(60);  // everything is sent after the exit
  JobRunner runner(config, "w1", Job("success"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kSucceeded);
  std::vector<std::string> calls = client_.Locked([&] { return client_.calls; });
  const auto first_failure = std::find(calls.begin(), calls.end(), "report failed");
  const auto delivered = std::find(calls.begin(), calls.end(), "report");
  ASSERT_NE(first_failure, calls.end());
  ASSERT_NE(delivered, calls.end());
  EXPECT_GE(std::count(first_failure, delivered, "heartbeat"), 1)
      << ::testing::PrintToString(calls);
  EXPECT_EQ(calls.back(), "finish");
}

TEST_F(JobRunnerTest, FailureReportsExitCodeAndBoundedStderrTail) {
  JobRunner runner(Config(), "w1", Job("fail"), &client_, &launcher_);
  JobRunOutcome outcome = runner.Run();

  EXPECT_EQ(outcome.end, JobEnd::kFailed);
  ASSERT_EQ(client_.finished.size(), 1u);
  const JobResult& result = client_.finished[0].result;
  EXPECT_FALSE(result.succeeded());
  EXPECT_EQ(result.reason, "exit code 1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.stderr_tail, HasSubstr("stderr line 200"));
  EXPECT_THAT(result.stderr_tail, Not(HasSubstr("stderr line 100\n")));
  // The points written before the failure still reach the coordinator.
  EXPECT_THAT(AllPoints(), Contains(MetricPoint{"train/loss", 50, 4.0}));
}

TEST_F(JobRunnerTest, EveryStderrLineIsRelayedNumberedBeforeTheEnd) {
  JobRunner runner(Config(), "w1", Job("fail"), &client_, &launcher_);
  runner.Run();
  std::vector<LogLine> lines = client_.Locked([&] { return client_.log_lines; });
  // Two header lines of the fake trainer, then its 200 numbered lines, each exactly once.
  ASSERT_EQ(lines.size(), 202u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].line, static_cast<int64_t>(i + 1));
  EXPECT_EQ(lines[2].text, "stderr line 1");
  EXPECT_EQ(lines.back().text, "stderr line 200");
}

TEST_F(JobRunnerTest, InvalidUtf8OnStderrReachesTheCoordinatorRepaired) {
  JobRunner runner(Config(), "w1", Job("bad_utf8"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kSucceeded);
  std::vector<LogLine> lines = client_.Locked([&] { return client_.log_lines; });
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2].text, "bad byte \xEF\xBF\xBD here");
  EXPECT_EQ(lines[3].text, "cut \xEF\xBF\xBD");
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_TRUE(common::IsValidUtf8(client_.finished[0].result.stderr_tail));
  EXPECT_THAT(client_.finished[0].result.stderr_tail, HasSubstr("bad byte \xEF\xBF\xBD here"));
}

TEST_F(JobRunnerTest, LinesDroppedForWantOfRoomAreExplainedInTheCellsLog) {
  JobRunnerConfig config = Config();
  config.log_buffer_lines = 100;
  config.log_flush_lines = 1'000;                    // no early relay
  config.flush_interval = std::chrono::seconds(60);  // nothing is relayed before the exit
  JobRunner runner(config, "w1", Job("fail"), &client_, &launcher_);
  runner.Run();
  std::vector<LogLine> lines = client_.Locked([&] { return client_.log_lines; });
  ASSERT_EQ(lines.size(), 101u);  // the newest 100 of 202, then what became of the others
  EXPECT_EQ(lines.front().line, 103);
  EXPECT_EQ(lines[99].text, "stderr line 200");
  EXPECT_EQ(lines.back().text,
            "onset-worker: 102 trainer log lines were dropped, the oldest first: the worker holds "
            "at most 100 unsent lines (32 MiB) and the trainer wrote them faster than the "
            "coordinator took them");
}

TEST_F(JobRunnerTest, LogCallsAreBoundedInBytes) {
  JobRunner runner(Config(), "w1", Job("long_lines"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kSucceeded);
  std::vector<LogLine> lines = client_.Locked([&] { return client_.log_lines; });
  EXPECT_EQ(lines.size(), 2u + 400u);
  for (size_t bytes : client_.Locked([&] { return client_.log_call_bytes; })) {
    EXPECT_LE(bytes, 1u << 20);
  }
}

TEST_F(JobRunnerTest, LogsThatCannotBeRelayedDoNotFailTheJob) {
  client_.logs_status = absl::UnavailableError("AppendLogs to fake: connection refused");
  JobRunner runner(Config(), "w1", Job("success"), &client_, &launcher_);
  JobRunOutcome outcome = runner.Run();
  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_TRUE(client_.finished[0].result.succeeded());
}

TEST_F(JobRunnerTest, ExitThreeIsDiverged) {
  JobRunner runner(Config(), "w1", Job("diverged"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kDiverged);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_EQ(client_.finished[0].result.outcome, JobOutcome::kDiverged);
  EXPECT_EQ(client_.finished[0].result.reason, "diverged: the training loss was not finite");
  EXPECT_EQ(client_.finished[0].result.exit_code, 3);
  EXPECT_THAT(client_.finished[0].result.stderr_tail, HasSubstr("loss is NaN"));
}

TEST_F(JobRunnerTest, KilledBySignal) {
  JobRunner runner(Config(), "w1", Job("signal"), &client_, &launcher_);
  runner.Run();
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_EQ(client_.finished[0].result.reason, "killed by signal 9 (SIGKILL)");
  EXPECT_EQ(client_.finished[0].result.signal, SIGKILL);
}

TEST_F(JobRunnerTest, MissingTrainerFailsTheJob) {
  JobRunnerConfig config = Config();
  config.trainer_path = "/nonexistent/onset-train";
  JobRunner runner(config, "w1", Job("success"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kFailed);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_THAT(client_.finished[0].result.reason, StartsWith("cannot start the trainer"));
}

TEST_F(JobRunnerTest, HeartbeatsCarryProgress) {
  JobRunner runner(Config(), "w1", Job("hang"), &client_, &launcher_);
  std::thread run([&] { runner.Run(); });
  EXPECT_TRUE(client_.WaitUntil([&] {
    return client_.heartbeats.size() >= 3 && client_.heartbeats.back().tokens_done == 10;
  }));
  runner.Stop();
  run.join();
  EXPECT_EQ(client_.heartbeats.back().tokens_per_second, 10);
}

TEST_F(JobRunnerTest, LostLeaseTerminatesTheTrainerWithoutFinishing) {
  client_.heartbeat_status = absl::FailedPreconditionError("Heartbeat: unknown lease lease-1");
  JobRunner runner(Config(), "w1", Job("hang"), &client_, &launcher_);
  JobRunOutcome outcome = runner.Run();  // returns only because the trainer was terminated
  EXPECT_EQ(outcome.end, JobEnd::kLeaseLost);
  EXPECT_EQ(outcome.result.signal, SIGTERM);
  EXPECT_TRUE(client_.finished.empty());
}

TEST_F(JobRunnerTest, LostLeaseOnReportAlsoStops) {
  client_.report_status = absl::FailedPreconditionError("ReportMetrics: lease expired");
  JobRunnerConfig config = Config();
  config.heartbeat_interval = std::chrono::seconds(60);
  JobRunner runner(config, "w1", Job("hang"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kLeaseLost);
  EXPECT_TRUE(client_.finished.empty());
}

// A job run on its own thread while the test moves its fake clock in steps, each followed by a
// little real time for the run loop to see it.
class RunWhileTheClockMoves {
 public:
  RunWhileTheClockMoves(JobRunner* runner, common::FakeClock* clock)
      : clock_(clock), thread_([this, runner] {
          outcome_ = runner->Run();
          returned_ = true;
        }) {}
  ~RunWhileTheClockMoves() {
    if (thread_.joinable()) thread_.join();
  }

  // Moves the clock `steps` times by `step`, pausing `pause` after each; stops early once Run()
  // has returned when `until_returned`. Then waits `settle` of real time.
  void Advance(std::chrono::milliseconds step, int steps, std::chrono::milliseconds pause,
               bool until_returned = false,
               std::chrono::milliseconds settle = std::chrono::milliseconds(0)) {
    for (int i = 0; i < steps && !(until_returned && returned_); ++i) {
      clock_->Advance(step);
      std::this_thread::sleep_for(pause);
    }
    std::this_thread::sleep_for(settle);
  }
  bool returned() const { return returned_; }
  // Waits for Run() and returns what it returned.
  JobRunOutcome Join() {
    thread_.join();
    return outcome_;
  }

 private:
  common::FakeClock* const clock_;
  JobRunOutcome outcome_;
  std::atomic<bool> returned_{false};
  std::thread thread_;
};

// A worker cut off from its coordinator for as long as the lease (less one heartbeat interval,
// so that its trainer has stopped before the coordinator can lease the cell again) stops its
// trainer: two trainers must never write one cell's checkpoints. Heartbeats that fail for less
// keep it running.
TEST_F(JobRunnerTest, HeartbeatsFailingForLongerThanTheLeaseStopTheTrainerAndReportNothing) {
  common::FakeClock clock;
  client_.heartbeat_status = absl::UnavailableError("Heartbeat to fake: connection refused");
  JobRunnerConfig config = Config();
  config.heartbeat_interval = std::chrono::seconds(1);
  config.lease_ttl = std::chrono::seconds(10);
  config.max_wait = std::chrono::milliseconds(10);
  JobRunner runner(config, "w1", Job("hang"), &client_, &launcher_, clock);
  RunWhileTheClockMoves run(&runner, &clock);
  // 8.5 s of failing heartbeats in small steps, each seen by the run loop: within the lease less
  // its margin (10 s - 1 s).
  run.Advance(std::chrono::milliseconds(100), 85, std::chrono::milliseconds(5), false,
              std::chrono::milliseconds(200));
  const bool stopped_within_the_lease = run.returned();
  EXPECT_GE(client_.Locked([&] { return client_.heartbeats.size(); }), 5u);
  run.Advance(std::chrono::milliseconds(100), 200, std::chrono::milliseconds(10),
              /*until_returned=*/true);  // past the lease
  const JobRunOutcome outcome = run.Join();
  EXPECT_FALSE(stopped_within_the_lease);
  // Each heartbeat was bounded by what was left of the lease, so a call that hangs (a partition
  // that drops packets) cannot hold the trainer past it.
  const std::vector<std::chrono::milliseconds> bounds =
      client_.Locked([&] { return client_.heartbeat_timeouts; });
  ASSERT_GE(bounds.size(), 5u);
  for (size_t i = 0; i < bounds.size(); ++i) {
    EXPECT_GT(bounds[i].count(), 0) << i;
    EXPECT_LE(bounds[i], std::chrono::seconds(9)) << i;  // the TTL less one interval
    if (i > 0) {
      EXPECT_LT(bounds[i], bounds[i - 1]) << i;
    }
  }
  EXPECT_EQ(outcome.end, JobEnd::kLeaseLost);
  EXPECT_EQ(outcome.result.signal, SIGTERM);
  EXPECT_TRUE(client_.finished.empty());
}

// After a lost lease only the stop margin (one heartbeat interval) is left before the coordinator
// may lease the cell again, so a trainer that takes longer than half of it to stop (here 3 s to
// checkpoint on SIGTERM) is killed: it must be gone before another trainer of its cell starts.
TEST_F(JobRunnerTest, ATrainerSlowToStopAfterALostLeaseIsKilledWithinHalfAHeartbeatInterval) {
  common::FakeClock clock;
  client_.heartbeat_status = absl::UnavailableError("Heartbeat to fake: connection refused");
  JobRunnerConfig config = Config();
  config.heartbeat_interval = std::chrono::seconds(1);
  config.lease_ttl = std::chrono::seconds(10);
  config.terminate_grace = std::chrono::seconds(10);  // what a worker asked to stop would give
  config.max_wait = std::chrono::milliseconds(10);
  JobRunner runner(config, "w1", Job("slow_stop"), &client_, &launcher_, clock);
  RunWhileTheClockMoves run(&runner, &clock);
  run.Advance(std::chrono::milliseconds(100), 200, std::chrono::milliseconds(10),
              /*until_returned=*/true);
  const JobRunOutcome outcome = run.Join();
  EXPECT_EQ(outcome.end, JobEnd::kLeaseLost);
  EXPECT_EQ(outcome.result.signal, SIGKILL);  // not the exit 4 of a checkpoint after 3 s
  EXPECT_TRUE(client_.finished.empty());
}

// A trainer that heartbeats through its worker but writes nothing (a hung read, a deadlocked
// rank) would hold its cell "running" for ever: after the stall timeout it is stopped and its
// attempt fails, saying why. Output within the timeout keeps it running.
TEST_F(JobRunnerTest, ATrainerThatWritesNothingForTheStallTimeoutIsStoppedAndFails) {
  common::FakeClock clock;
  JobRunnerConfig config = Config();
  config.heartbeat_interval = std::chrono::seconds(1);
  config.stall_timeout = std::chrono::seconds(30);
  config.max_wait = std::chrono::milliseconds(10);
  JobRunner runner(config, "w1", Job("hang"), &client_, &launcher_, clock);
  RunWhileTheClockMoves run(&runner, &clock);
  // The fake trainer writes its one line at once, then nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  run.Advance(std::chrono::seconds(1), 25, std::chrono::milliseconds(5), false,
              std::chrono::milliseconds(100));  // 25 s: within the timeout
  const bool stopped_early = run.returned();
  run.Advance(std::chrono::seconds(1), 100, std::chrono::milliseconds(10),
              /*until_returned=*/true);
  const JobRunOutcome outcome = run.Join();
  EXPECT_FALSE(stopped_early);
  EXPECT_EQ(outcome.end, JobEnd::kFailed);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_EQ(client_.finished[0].result.outcome, JobOutcome::kFailed);
  EXPECT_THAT(client_.finished[0].result.reason,
              HasSubstr("no progress: the trainer wrote no metrics line for 30 s"));
}

TEST_F(JobRunnerTest, StopReportsWorkerStopped) {
  JobRunner runner(Config(), "w1", Job("hang"), &client_, &launcher_);
  std::thread run([&] { runner.Run(); });
  ASSERT_TRUE(client_.WaitUntil([&] { return !client_.batches.empty(); }));
  runner.Stop();
  run.join();
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_FALSE(client_.finished[0].result.succeeded());
  // Handed back: the coordinator requeues the cell without counting a failure.
  EXPECT_EQ(client_.finished[0].result.outcome, JobOutcome::kHandedBack);
  EXPECT_EQ(client_.finished[0].result.reason, "worker stopped");
  EXPECT_EQ(client_.finished[0].result.signal, SIGTERM);
}

TEST_F(JobRunnerTest, ATrainerStoppedByAnotherSignalHandsTheCellBack) {
  // A cluster's scheduler signals the trainer itself; it checkpoints and exits 4.
  JobRunner runner(Config(), "w1", Job("stopped"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kStopped);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_EQ(client_.finished[0].result.outcome, JobOutcome::kHandedBack);
  EXPECT_EQ(client_.finished[0].result.reason, "trainer stopped by a signal");
  EXPECT_EQ(client_.finished[0].result.exit_code, 4);
}

TEST_F(JobRunnerTest, ACancelledCellStopsTheTrainerAndSaysSo) {
  client_.cancel_cells = true;
  JobRunner runner(Config(), "w1", Job("hang"), &client_, &launcher_);
  EXPECT_EQ(runner.Run().end, JobEnd::kCancelled);  // returns because the trainer was stopped
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_EQ(client_.finished[0].result.outcome, JobOutcome::kCancelled);
  EXPECT_EQ(client_.finished[0].result.signal, SIGTERM);
}

// The trainer resumes the checkpoints the coordinator named, the newest first, and no other: an
// earlier attempt's newer file, which its lineage never recorded, is not read and not touched.
TEST_F(JobRunnerTest, TheTrainerResumesOnlyTheNamedCheckpoints) {
  JobSpec job = Job("success");
  const fs::path earlier = work_dir_ / job.cell_id / "attempt-1" / "checkpoints";
  fs::create_directories(earlier);
  std::ofstream(earlier / "ckpt-000000001000.pt") << "recorded";
  std::ofstream(earlier / "ckpt-000000002000.pt") << "written after its report was lost";
  job.resume_from = {{1, 1000, "", true}};
  JobRunner runner(Config(), "w1", job, &client_, &launcher_);
  JobRunOutcome outcome = runner.Run();
  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  EXPECT_THAT(
      outcome.result.stderr_tail,
      HasSubstr("resume_from=[" + (fs::absolute(earlier) / "ckpt-000000001000.pt").string() + "]"));
  EXPECT_TRUE(fs::exists(earlier / "ckpt-000000002000.pt"));
}

// While the trainer runs it holds its attempt's lock (and nobody can take it); once it is gone
// the lock is free, whoever stopped it.
TEST_F(JobRunnerTest, TheTrainerHoldsItsAttemptsLockWhileItRuns) {
  JobSpec job = Job("hang");
  JobRunner runner(Config(), "w1", job, &client_, &launcher_);
  std::thread run([&] { runner.Run(); });
  const fs::path lock = work_dir_ / job.cell_id / "attempt-2" / "trainer.lock";
  ASSERT_TRUE(client_.WaitUntil([&] { return !client_.heartbeats.empty(); }));
  EXPECT_EQ(TrainerLock::Take(lock).status().code(), absl::StatusCode::kFailedPrecondition);
  runner.Stop();
  run.join();
  EXPECT_TRUE(TrainerLock::Take(lock).ok());
  EXPECT_TRUE(WaitForTrainerGone(lock, std::chrono::milliseconds(10)).ok());
}

TEST_F(JobRunnerTest, HeartbeatsFollowTheInjectedClock) {
  common::FakeClock clock;
  JobRunnerConfig config = Config();
  config.heartbeat_interval = std::chrono::seconds(30);
  config.flush_interval = std::chrono::seconds(10);
  config.max_wait = std::chrono::milliseconds(10);
  JobRunner runner(config, "w1", Job("hang"), &client_, &launcher_, clock);
  std::thread run([&] { runner.Run(); });

  // The trainer's first line is held back until the fake flush interval has passed.
  ASSERT_FALSE(
      client_.WaitUntil([&] { return !client_.batches.empty(); }, std::chrono::milliseconds(300)));
  clock.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(client_.WaitUntil([&] { return !client_.batches.empty(); }));
  EXPECT_TRUE(client_.Locked([&] { return client_.heartbeats.empty(); }));
  clock.Advance(std::chrono::seconds(20));
  EXPECT_TRUE(client_.WaitUntil([&] { return client_.heartbeats.size() == 1; }));

  runner.Stop();
  run.join();
}

TEST_F(JobRunnerTest, TheEndIsReportedAgainAfterADelayOfTheInjectedClock) {
  common::FakeClock clock;
  client_.finish_failures = 1;  // unreachable once
  JobRunnerConfig config = Config();
  config.max_wait = std::chrono::milliseconds(10);
  JobRunner runner(config, "w1", Job("success"), &client_, &launcher_, clock);
  JobRunOutcome outcome;
  std::thread run([&] { outcome = runner.Run(); });

  ASSERT_TRUE(client_.WaitUntil([&] {
    return std::count(client_.calls.begin(), client_.calls.end(), "finish refused") == 1;
  }));
  // The retry waits for the clock, not for real time.
  EXPECT_FALSE(
      client_.WaitUntil([&] { return !client_.finished.empty(); }, std::chrono::milliseconds(300)));
  clock.Advance(std::chrono::milliseconds(250));
  EXPECT_TRUE(client_.WaitUntil([&] { return !client_.finished.empty(); }));
  run.join();
  EXPECT_EQ(outcome.end, JobEnd::kSucceeded);
  EXPECT_TRUE(outcome.finish_status.ok()) << outcome.finish_status;
}

// A cell id that is not one path component would place the attempt, and the checkpoints a
// fresh start deletes, outside the work directory: the job fails before anything is touched.
TEST_F(JobRunnerTest, ACellIdThatLeavesTheWorkDirectoryFailsTheJob) {
  const fs::path outside = work_dir_.parent_path() / ("onset-outside-" + std::to_string(getpid()));
  fs::create_directories(outside / "checkpoints");
  JobSpec job = Job("success");
  job.cell_id = "../" + outside.filename().string();
  job.fresh = true;
  JobRunOutcome outcome = JobRunner(Config(), "w1", job, &client_, &launcher_).Run();
  EXPECT_EQ(outcome.end, JobEnd::kFailed);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_THAT(client_.finished[0].result.reason,
              StartsWith("cell id '" + job.cell_id + "' cannot name a directory under "));
  EXPECT_TRUE(fs::exists(outside / "checkpoints"));
  fs::remove_all(outside);
}

}  // namespace
}  // namespace onset::worker
