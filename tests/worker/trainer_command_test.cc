#include "worker/trainer_command.h"

#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

AttemptDir Attempt() {
  AttemptDir attempt;
  attempt.dir = "/var/lib/onset/00c0ffee/attempt-2";
  attempt.config_path = "/var/lib/onset/00c0ffee/attempt-2/config.json";
  attempt.checkpoint_dir = "/var/lib/onset/00c0ffee/attempt-2/checkpoints";
  return attempt;
}

TEST(TrainerCommandTest, WithoutDevicesTheTrainerChooses) {
  absl::StatusOr<std::optional<DeviceLaunch>> launch = TrainerLaunch({});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_FALSE(launch->has_value());

  const SpawnOptions command = TrainerCommand("/bin/onset-train", 4, Attempt(), "", *launch);
  EXPECT_EQ(command.program, "/bin/onset-train");
  EXPECT_THAT(command.args, ElementsAre("--config", "/var/lib/onset/00c0ffee/attempt-2/config.json",
                                        "--threads", "4", "--checkpoint-dir",
                                        "/var/lib/onset/00c0ffee/attempt-2/checkpoints"));
  EXPECT_EQ(command.env, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", "4"},
                                                             {"MKL_NUM_THREADS", "4"}}));
  EXPECT_EQ(command.working_dir, "/var/lib/onset/00c0ffee/attempt-2");
  EXPECT_EQ(DescribeLaunch({}, *launch), "");
  // The worker's token stays with the worker.
  EXPECT_THAT(command.unset_env, ElementsAre("ONSET_TOKEN", "ONSET_TOKEN_FILE"));
}

TEST(TrainerCommandTest, OnGpusOneRankPerDeviceSeeingOnlyThem) {
  const std::vector<std::string> devices = {"cuda:3", "cuda:1"};
  absl::StatusOr<std::optional<DeviceLaunch>> launch = TrainerLaunch(devices);
  ASSERT_TRUE(launch.ok()) << launch.status();
  const SpawnOptions command = TrainerCommand("/bin/onset-train", 2, Attempt(), "", *launch);
  EXPECT_THAT(command.args,
              ElementsAre("--config", "/var/lib/onset/00c0ffee/attempt-2/config.json", "--threads",
                          "2", "--checkpoint-dir", "/var/lib/onset/00c0ffee/attempt-2/checkpoints",
                          "--device", "cuda", "--nproc", "2"));
  EXPECT_EQ(command.env.at("CUDA_VISIBLE_DEVICES"), "3,1");
  EXPECT_EQ(DescribeLaunch(devices, *launch), " on cuda:3,cuda:1 (--device cuda --nproc 2)");
}

TEST(TrainerCommandTest, OnOneDeviceNoNprocFlag) {
  absl::StatusOr<std::optional<DeviceLaunch>> launch = TrainerLaunch({"cuda:2"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  const SpawnOptions command = TrainerCommand("/bin/onset-train", 1, Attempt(), "", *launch);
  EXPECT_THAT(command.args,
              ElementsAre("--config", "/var/lib/onset/00c0ffee/attempt-2/config.json", "--threads",
                          "1", "--checkpoint-dir", "/var/lib/onset/00c0ffee/attempt-2/checkpoints",
                          "--device", "cuda"));
  EXPECT_EQ(command.env.at("CUDA_VISIBLE_DEVICES"), "2");
}

TEST(TrainerCommandTest, OnCpuSlotsNoGpuIsVisible) {
  absl::StatusOr<std::optional<DeviceLaunch>> launch = TrainerLaunch({"cpu:0", "cpu:1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  const SpawnOptions command = TrainerCommand("/bin/onset-train", 1, Attempt(), "", *launch);
  EXPECT_EQ(command.env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(command.args[command.args.size() - 3], "cpu");
}

// A WSD branch resumes a checkpoint of its own when it has one, else starts from its trunk's; it
// resumes nothing but what the coordinator named, the newest first. The trainer lock and the
// supervisor pipe reach the trainer at the contract's descriptor numbers.
TEST(TrainerCommandTest, ABranchStartsFromItsTrunkCheckpointAfterTheNamedOnes) {
  absl::StatusOr<std::optional<DeviceLaunch>> launch = TrainerLaunch({"cuda:2"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  AttemptDir attempt = Attempt();
  attempt.resume_files = {"/var/lib/onset/00c0ffee/attempt-1/checkpoints/ckpt-000000600000.pt"};
  const SpawnOptions command =
      TrainerCommand("/bin/onset-train", 1, attempt,
                     "/shared/ckpt/7e57ab1e/attempt-1/ckpt-000000524288.pt", *launch, {17, 18});
  EXPECT_THAT(
      command.args,
      ElementsAre("--config", "/var/lib/onset/00c0ffee/attempt-2/config.json", "--threads", "1",
                  "--checkpoint-dir", "/var/lib/onset/00c0ffee/attempt-2/checkpoints",
                  "--resume-from",
                  "/var/lib/onset/00c0ffee/attempt-1/checkpoints/ckpt-000000600000.pt",
                  "--supervisor-fd", "4", "--branch-from",
                  "/shared/ckpt/7e57ab1e/attempt-1/ckpt-000000524288.pt", "--device", "cuda"));
  EXPECT_THAT(command.pass_fds,
              ElementsAre(std::pair<int, int>(17, 3), std::pair<int, int>(18, 4)));
}

TEST(TrainerCommandTest, DevicesItCannotRunOnAreTheJobsFailureReason) {
  absl::StatusOr<std::optional<DeviceLaunch>> launch = TrainerLaunch({"cuda:0", "cpu:1"});
  EXPECT_THAT(std::string(launch.status().message()),
              StartsWith("cannot run on the devices the coordinator gave (cuda:0,cpu:1): "));
}

}  // namespace
}  // namespace onset::worker
