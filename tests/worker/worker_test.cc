#include "worker/worker.h"

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "tests/db/log_capture.h"
#include "tests/worker/fake_coordinator_client.h"
#include "worker/idle_timer.h"
#include "worker/slurm_job.h"

namespace onset::worker {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kFakeTrainer[] = ONSET_WORKER_TESTDATA "/fake_trainer.sh";

JobSpec Job(const std::string& lease, const std::string& mode) {
  JobSpec job;
  job.lease_id = lease;
  job.study = "demo";
  job.cell_id = "cell-" + lease;
  job.config_json = mode;
  return job;
}

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.trainer_path = kFakeTrainer;
    config_.work_dir = (fs::temp_directory_path() /
                        ("onset-worker-" + std::to_string(getpid()) + "-" +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                           .string();
    config_.devices = {"cpu:0", "cpu:1"};
    config_.poll_interval = std::chrono::milliseconds(20);
    config_.max_backoff = std::chrono::milliseconds(500);
    config_.flush_interval = std::chrono::milliseconds(20);
    config_.terminate_grace = std::chrono::seconds(5);
  }
  void TearDown() override { fs::remove_all(config_.work_dir); }

  WorkerConfig config_;
  FakeCoordinatorClient client_;
  PosixProcessLauncher launcher_;
};

TEST_F(WorkerTest, ValidateNamesTheBadField) {
  WorkerConfig config = config_;
  config.devices = {};
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("devices:"));
  config.devices = {"cuda:0", "cuda:0"};
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("devices:"));
  config = config_;
  config.trainer_path = "/nonexistent/onset-train";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("trainer_path:"));
  config = config_;
  config.threads_per_job = 0;
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("threads_per_job:"));
  EXPECT_TRUE(config_.Validate().ok());
}

TEST_F(WorkerTest, RunsLeasedJobsAfterRetryingRegistration) {
  client_.register_failures = 2;
  client_.jobs = {Job("a", "success"), Job("b", "fail"), Job("c", "success")};
  Worker worker(config_, &client_, &launcher_);
  std::thread run([&] { EXPECT_TRUE(worker.Run().ok()); });
  EXPECT_TRUE(client_.WaitUntil([&] { return client_.finished.size() == 3; }));
  worker.Stop();
  run.join();

  EXPECT_EQ(client_.register_calls, 3);
  int succeeded = 0;
  for (const auto& f : client_.finished) succeeded += f.result.succeeded() ? 1 : 0;
  EXPECT_EQ(succeeded, 2);
  // A clean stop leaves the coordinator's list of live workers, once.
  EXPECT_EQ(client_.deregistered, std::vector<std::string>{"w1"});
}

TEST_F(WorkerTest, KeepsAtMostOneJobPerDeviceRunning) {
  client_.jobs = {Job("a", "hang"), Job("b", "hang"), Job("c", "hang")};
  Worker worker(config_, &client_, &launcher_);
  std::thread run([&] { EXPECT_TRUE(worker.Run().ok()); });
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.jobs.size() == 1; }));
  // Several polling periods pass without a third lease.
  int leases = client_.Locked([&] { return client_.lease_calls; });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(client_.Locked([&] { return client_.jobs.size(); }), 1u);
  EXPECT_EQ(client_.Locked([&] { return client_.lease_calls; }), leases);
  EXPECT_EQ(worker.running_jobs(), 2);

  worker.Stop();
  run.join();
  ASSERT_EQ(client_.finished.size(), 2u);
  for (const auto& f : client_.finished) {
    EXPECT_EQ(f.result.reason, "worker stopped");
    EXPECT_THAT(f.result.stderr_tail, HasSubstr("mode=hang"));
  }
}

// A job of two devices and jobs of one on a worker with three GPUs: each job sees only its
// GPUs, and the worker leases while some are free, offering exactly those.
TEST_F(WorkerTest, RunsJobsOnTheirOwnDevicesAndLeasesWithTheFreeOnes) {
  config_.devices = {"cuda:0", "cuda:1", "cuda:2"};
  JobSpec pair = Job("a", "hang");
  pair.devices = {"", ""};  // needs two
  JobSpec quick = Job("b", "success");
  quick.devices = {""};
  JobSpec single = Job("c", "hang");
  single.devices = {""};
  client_.jobs = {pair, quick, single};
  Worker worker(config_, &client_, &launcher_);
  std::thread run([&] { EXPECT_TRUE(worker.Run().ok()); });
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.jobs.empty(); }));
  // Every device is busy: several polling periods pass without a lease.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(worker.running_jobs(), 2);
  EXPECT_EQ(client_.Locked([&] { return client_.registered_devices; }), config_.devices);
  EXPECT_EQ(client_.Locked([&] { return client_.lease_free_devices; }),
            (std::vector<std::vector<std::string>>{
                {"cuda:0", "cuda:1", "cuda:2"}, {"cuda:2"}, {"cuda:2"}}));

  worker.Stop();
  run.join();
  std::map<std::string, std::string> tails;
  for (const auto& f : client_.finished) tails[f.lease_id] = f.result.stderr_tail;
  ASSERT_EQ(tails.size(), 3u);
  EXPECT_THAT(tails["a"], HasSubstr("device=cuda nproc=2 cuda_visible_devices=0,1."));
  EXPECT_THAT(tails["b"], HasSubstr("device=cuda nproc= cuda_visible_devices=2."));
  EXPECT_THAT(tails["c"], HasSubstr("device=cuda nproc= cuda_visible_devices=2."));
}

TEST_F(WorkerTest, AJobOnDevicesThatAreNotFreeIsReportedFailedNotRun) {
  JobSpec job = Job("a", "success");
  job.devices = {"cpu:7"};
  client_.jobs = {job};
  client_.keep_devices = true;
  Worker worker(config_, &client_, &launcher_);
  std::thread run([&] { EXPECT_TRUE(worker.Run().ok()); });
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.finished.size() == 1; }));
  worker.Stop();
  run.join();
  EXPECT_EQ(client_.finished[0].result.outcome, JobOutcome::kFailed);
  EXPECT_EQ(client_.finished[0].result.reason,
            "the coordinator gave devices cpu:7 but only cpu:0,cpu:1 are free");
  EXPECT_EQ(client_.finished[0].result.stderr_tail, "");
}

TEST_F(WorkerTest, ARefusedTokenAtRegistrationEndsTheRunAtOnce) {
  client_.register_status = absl::UnauthenticatedError("RegisterWorker to fake: missing token");
  Worker worker(config_, &client_, &launcher_);
  absl::Status s = worker.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(s.message()), HasSubstr("missing token"));
  EXPECT_EQ(client_.register_calls, 1);
  EXPECT_TRUE(client_.deregistered.empty());  // never registered, nothing to leave
}

TEST_F(WorkerTest, ARefusedTokenWhileLeasingStopsTheRunningJobs) {
  client_.jobs = {Job("a", "hang")};
  Worker worker(config_, &client_, &launcher_);
  absl::Status result;
  std::thread run([&] { result = worker.Run(); });
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.jobs.empty(); }));
  client_.Locked([&] {
    client_.lease_status = absl::PermissionDeniedError("LeaseJob to fake: token revoked");
    return 0;
  });
  run.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kPermissionDenied);
  ASSERT_EQ(client_.finished.size(), 1u);
  EXPECT_EQ(client_.finished[0].result.reason, "worker stopped");
}

TEST_F(WorkerTest, ValidateBoundsTheIdleExit) {
  WorkerConfig config = config_;
  config.exit_when_idle = std::chrono::milliseconds(0);
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("exit_when_idle:"));
  config.exit_when_idle = std::chrono::hours(7 * 24) + std::chrono::milliseconds(1);
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("exit_when_idle:"));
  config.exit_when_idle = std::chrono::hours(7 * 24);
  EXPECT_TRUE(config.Validate().ok());
}

TEST(ExitWhenIdleTest, SecondsAreMoreThanZeroAndAtMostAWeek) {
  EXPECT_EQ(*ExitWhenIdleFromSeconds(600), std::chrono::milliseconds(600'000));
  EXPECT_EQ(*ExitWhenIdleFromSeconds(0.0005), std::chrono::milliseconds(1));
  EXPECT_EQ(*ExitWhenIdleFromSeconds(604800), std::chrono::milliseconds(604'800'000));
  for (double bad : {0.0, -5.0, 604800.5, std::nan("")}) {
    absl::StatusOr<std::chrono::milliseconds> got = ExitWhenIdleFromSeconds(bad);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ExitWhenIdleFromSeconds(-5).status().message(),
            "--exit-when-idle: must be more than 0 and at most 604800 seconds (7 days), got -5");
}

TEST(IdleTimerTest, OnlyAnUnbrokenRunOfIdleAnswersCounts) {
  common::FakeClock clock;
  IdleTimer idle(std::chrono::seconds(60), clock);
  EXPECT_FALSE(idle.NoJob(0, 0));  // the run starts
  clock.Advance(std::chrono::seconds(59));
  EXPECT_FALSE(idle.NoJob(0, 0));
  EXPECT_FALSE(idle.NoJob(1, 0));  // a job runs: the run is broken
  clock.Advance(std::chrono::seconds(60));
  EXPECT_FALSE(idle.NoJob(0, 0));
  clock.Advance(std::chrono::seconds(60));
  EXPECT_FALSE(idle.NoJob(0, 2));  // cells wait for this worker
  EXPECT_FALSE(idle.NoJob(0, 0));
  clock.Advance(std::chrono::seconds(60));
  idle.Reset();  // e.g. the coordinator could not be reached
  EXPECT_FALSE(idle.NoJob(0, 0));
  clock.Advance(std::chrono::seconds(60));
  EXPECT_TRUE(idle.NoJob(0, 0));
}

TEST(SlurmJobTest, AnArrayTaskIsNamedByItsArrayJobAndTask) {
  auto from = [](std::map<std::string, std::string> env) {
    return SlurmJobFromEnvironment([&env](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  EXPECT_EQ(from({}), "");
  EXPECT_EQ(from({{"SLURM_JOB_ID", "1234"}}), "1234");
  EXPECT_EQ(
      from(
          {{"SLURM_JOB_ID", "1239"}, {"SLURM_ARRAY_JOB_ID", "1234"}, {"SLURM_ARRAY_TASK_ID", "5"}}),
      "1234_5");
  // Half an array's names, or values that are no ids, are passed over.
  EXPECT_EQ(from({{"SLURM_JOB_ID", "1239"}, {"SLURM_ARRAY_JOB_ID", "1234"}}), "1239");
  EXPECT_EQ(
      from(
          {{"SLURM_JOB_ID", "1239"}, {"SLURM_ARRAY_JOB_ID", "1234"}, {"SLURM_ARRAY_TASK_ID", "x"}}),
      "1239");
  EXPECT_EQ(from({{"SLURM_JOB_ID", ""}}), "");
  EXPECT_EQ(from({{"SLURM_JOB_ID", "12 34"}}), "");
  EXPECT_EQ(from({{"SLURM_JOB_ID", std::string(21, '1')}}), "");
}

TEST_F(WorkerTest, ReportsItsSlurmJobAtRegistration) {
  config_.slurm_job = "1234_5";
  Worker worker(config_, &client_, &launcher_);
  std::thread run([&] { EXPECT_TRUE(worker.Run().ok()); });
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.lease_calls > 0; }));
  worker.Stop();
  run.join();
  EXPECT_EQ(client_.registered_slurm_job, "1234_5");
}

// The worker's loop against the fake coordinator, the idle time measured on a fake clock: the
// test moves it while the loop polls.
class IdleExitTest : public WorkerTest {
 protected:
  void SetUp() override {
    WorkerTest::SetUp();
    config_.exit_when_idle = kLimit;
  }
  void TearDown() override {
    if (run_.joinable()) {
      worker_->Stop();
      run_.join();
    }
    WorkerTest::TearDown();
  }

  void Start() {
    worker_ = std::make_unique<Worker>(config_, &client_, &launcher_, clock_);
    run_ = std::thread([this] {
      absl::Status result = worker_->Run();
      std::lock_guard<std::mutex> lock(mu_);
      result_ = result;
      exited_ = true;
      cv_.notify_all();
    });
  }
  int LeaseCalls() {
    return client_.Locked([&] { return client_.lease_calls; });
  }
  // Waits for `n` more lease answers: the loop has seen the clock as it is now.
  void AwaitLeases(int n) {
    const int target = LeaseCalls() + n;
    ASSERT_TRUE(client_.WaitUntil([&] { return client_.lease_calls >= target; }));
  }
  bool Exited() {
    std::lock_guard<std::mutex> lock(mu_);
    return exited_;
  }
  // Waits until Run() returns and joins it; false when it does not.
  bool AwaitExit() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::seconds(20), [&] { return exited_; })) return false;
    }
    run_.join();
    return true;
  }

  static constexpr std::chrono::milliseconds kLimit{10 * 60'000};
  common::FakeClock clock_;
  std::unique_ptr<Worker> worker_;
  std::thread run_;
  std::mutex mu_;
  std::condition_variable cv_;
  absl::Status result_;  // guarded by mu_
  bool exited_ = false;  // guarded by mu_
};

TEST_F(IdleExitTest, ExitsOnceTheCoordinatorHadNoWorkForItForTheIdleTime) {
  db::testing::LogCapture log;
  Start();
  AwaitLeases(2);  // the idle time runs from the first answer
  clock_.Advance(kLimit - std::chrono::milliseconds(1));
  AwaitLeases(3);
  EXPECT_FALSE(Exited());
  clock_.Advance(std::chrono::milliseconds(1));
  ASSERT_TRUE(AwaitExit());
  EXPECT_TRUE(result_.ok()) << result_;
  EXPECT_THAT(log.text(), HasSubstr("no work for 600 s: exiting"));
}

TEST_F(IdleExitTest, DoesNotExitWhileAJobRuns) {
  client_.jobs = {Job("a", "hang")};
  client_.lease_ttl = 4 * kLimit;  // the jump below leaves the job's lease current
  Start();
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.jobs.empty(); }));
  AwaitLeases(2);  // with its other device: no job
  clock_.Advance(2 * kLimit);
  AwaitLeases(3);
  EXPECT_FALSE(Exited());
  EXPECT_EQ(worker_->running_jobs(), 1);
}

TEST_F(IdleExitTest, DoesNotExitWhileQueuedCellsWaitForIt) {
  client_.queued_waiting = 3;
  Start();
  AwaitLeases(2);
  clock_.Advance(2 * kLimit);
  AwaitLeases(3);
  EXPECT_FALSE(Exited());

  // Once nothing waits, the idle time starts from zero.
  client_.Locked([&] { return client_.queued_waiting = 0; });
  AwaitLeases(2);
  clock_.Advance(kLimit - std::chrono::milliseconds(1));
  AwaitLeases(3);
  EXPECT_FALSE(Exited());
  clock_.Advance(std::chrono::milliseconds(1));
  ASSERT_TRUE(AwaitExit());
  EXPECT_TRUE(result_.ok()) << result_;
}

// A coordinator that cannot be reached while nothing runs here is no work either: the worker
// leaves once that has lasted the idle time, with an error that says why.
TEST_F(IdleExitTest, AnUnreachableCoordinatorEndsTheWorkerAfterTheIdleTimeWithAnError) {
  db::testing::LogCapture log;
  Start();
  AwaitLeases(2);  // idle from here...
  client_.Locked([&] {
    client_.lease_status = absl::UnavailableError("LeaseJob to fake: connection refused");
    return 0;
  });
  AwaitLeases(1);
  clock_.Advance(kLimit);  // ... and unreachable since, together the idle time
  ASSERT_TRUE(AwaitExit());
  EXPECT_EQ(result_.code(), absl::StatusCode::kUnavailable) << result_;
  EXPECT_THAT(std::string(result_.message()), HasSubstr("could not reach the coordinator"));
  EXPECT_THAT(std::string(result_.message()), HasSubstr("connection refused"));
  // An unreachable coordinator is not asked again on the way out.
  EXPECT_TRUE(client_.deregistered.empty());
}

TEST_F(IdleExitTest, AnUnreachableCoordinatorIsWaitedForWhileAJobRuns) {
  client_.jobs = {Job("a", "hang")};
  client_.lease_ttl = 4 * kLimit;
  Start();
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.jobs.empty(); }));
  AwaitLeases(1);
  client_.Locked([&] {
    client_.lease_status = absl::UnavailableError("LeaseJob to fake: connection refused");
    return 0;
  });
  AwaitLeases(1);
  clock_.Advance(2 * kLimit);
  AwaitLeases(2);
  EXPECT_FALSE(Exited());
}

// A worker started against an address where nothing answers (a `slurm up` given a wrong one)
// never registers; it leaves after the idle time instead of holding its node.
TEST_F(IdleExitTest, AWorkerThatCannotRegisterLeavesAfterTheIdleTime) {
  client_.register_failures = 1'000'000;
  Start();
  ASSERT_TRUE(client_.WaitUntil([&] { return client_.register_calls >= 2; }));
  EXPECT_FALSE(Exited());
  clock_.Advance(kLimit);
  ASSERT_TRUE(AwaitExit());
  EXPECT_EQ(result_.code(), absl::StatusCode::kUnavailable) << result_;
  EXPECT_EQ(LeaseCalls(), 0);
}

TEST_F(IdleExitTest, WithoutTheFlagItNeverExits) {
  config_.exit_when_idle.reset();
  Start();
  AwaitLeases(2);
  clock_.Advance(std::chrono::hours(30 * 24));
  AwaitLeases(3);
  EXPECT_FALSE(Exited());
}

}  // namespace
}  // namespace onset::worker
