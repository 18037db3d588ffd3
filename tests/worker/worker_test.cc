#include "worker/worker.h"

#include <filesystem>
#include <map>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/worker/fake_coordinator_client.h"

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

}  // namespace
}  // namespace onset::worker
