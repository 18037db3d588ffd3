#include "worker/devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Parsed(const std::string& list) {
  absl::StatusOr<std::vector<std::string>> devices = ParseDevices(list);
  EXPECT_TRUE(devices.ok()) << list << ": " << devices.status();
  return devices.ok() ? *devices : std::vector<std::string>{};
}

std::string Error(const std::string& list) {
  absl::StatusOr<std::vector<std::string>> devices = ParseDevices(list);
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument) << list;
  return std::string(devices.status().message());
}

TEST(DevicesTest, GpusByIndexInEitherSpelling) {
  EXPECT_THAT(Parsed("cuda:0"), ElementsAre("cuda:0"));
  EXPECT_THAT(Parsed("cuda:0,1,3"), ElementsAre("cuda:0", "cuda:1", "cuda:3"));
  EXPECT_THAT(Parsed("cuda:0,cuda:1,cuda:3"), ElementsAre("cuda:0", "cuda:1", "cuda:3"));
  EXPECT_THAT(Parsed("cuda:2,cuda:0,1"), ElementsAre("cuda:2", "cuda:0", "cuda:1"));
  EXPECT_THAT(Parsed("cuda:007"), ElementsAre("cuda:7"));
}

TEST(DevicesTest, CpuSlotsByCount) {
  EXPECT_THAT(Parsed("cpu:1"), ElementsAre("cpu:0"));
  EXPECT_THAT(Parsed("cpu:3"), ElementsAre("cpu:0", "cpu:1", "cpu:2"));
  EXPECT_EQ(Parsed("cpu:1024").size(), 1024u);
}

TEST(DevicesTest, BadListsNameTheBadPart) {
  EXPECT_THAT(Error(""), HasSubstr("--devices: empty"));
  EXPECT_EQ(Error("gpu:0"),
            "--devices: 'gpu:0': expected GPUs (cuda:0,1) or a number of CPU slots (cpu:4)");
  EXPECT_EQ(Error("0,1"),
            "--devices: '0,1': expected GPUs (cuda:0,1) or a number of CPU slots (cpu:4)");
  EXPECT_EQ(Error("cuda:"), "--devices: 'cuda:': expected a CUDA device index (cuda:0,1)");
  EXPECT_EQ(Error("cuda:0,,1"), "--devices: 'cuda:0,,1': expected a CUDA device index (cuda:0,1)");
  EXPECT_EQ(Error("cuda:0,x"), "--devices: 'x': expected a CUDA device index (cuda:0,1)");
  EXPECT_EQ(Error("cuda:-1"), "--devices: '-1': expected a CUDA device index (cuda:0,1)");
  EXPECT_EQ(Error("cuda:1024"), "--devices: '1024': expected a CUDA device index (cuda:0,1)");
  EXPECT_EQ(Error("cuda:0, 1"), "--devices: ' 1': expected a CUDA device index (cuda:0,1)");
  EXPECT_EQ(Error("cuda:0,1,cuda:1"), "--devices: 'cuda:1': cuda:1 is listed twice");
  EXPECT_EQ(Error("cuda:0,cpu:1"),
            "--devices: 'cpu:1': a worker offers GPUs or CPU slots, not both");
  EXPECT_THAT(Error("cpu:0"), HasSubstr("cpu:N takes the number of CPU slots, 1 to 1024"));
  EXPECT_THAT(Error("cpu:1025"), HasSubstr("1 to 1024"));
  EXPECT_THAT(Error("cpu:0,1"), HasSubstr("'cpu:0,1': cpu:N takes the number of CPU slots"));
  EXPECT_THAT(Error("cpu:"), HasSubstr("cpu:N takes the number"));
}

TEST(DevicesTest, CheckAcceptsWhatParseGivesAndNothingElse) {
  EXPECT_TRUE(CheckDevices(Parsed("cuda:3,1")).ok());
  EXPECT_TRUE(CheckDevices(Parsed("cpu:4")).ok());
  EXPECT_EQ(CheckDevices({}).message(), "devices: none given");
  EXPECT_EQ(CheckDevices({"cuda:0", "cpu:1"}).message(),
            "devices: 'cpu:1' is not a CUDA device (cuda:N); a worker offers GPUs or CPU slots, "
            "not both");
  EXPECT_EQ(CheckDevices({"cpu:0", "cpu:0"}).message(), "devices: cpu:0 is listed twice");
  EXPECT_EQ(CheckDevices({"cuda:01"}).message(),
            "devices: 'cuda:01' is not a CUDA device (cuda:N)");
  EXPECT_EQ(CheckDevices({"gpu0"}).message(), "devices: 'gpu0' is not a CPU slot (cpu:N)");
}

TEST(DevicesTest, AJobOnGpusSeesOnlyThemAndRunsARankOnEach) {
  absl::StatusOr<DeviceLaunch> launch = LaunchOn({"cuda:3", "cuda:1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->device, "cuda");
  EXPECT_EQ(launch->cuda_visible_devices, "3,1");
  EXPECT_EQ(launch->nproc, 2);

  launch = LaunchOn({"cuda:2"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->cuda_visible_devices, "2");
  EXPECT_EQ(launch->nproc, 1);
}

TEST(DevicesTest, AJobOnCpuSlotsSeesNoGpu) {
  absl::StatusOr<DeviceLaunch> launch = LaunchOn({"cpu:0", "cpu:1", "cpu:2"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->device, "cpu");
  EXPECT_EQ(launch->cuda_visible_devices, "");
  EXPECT_EQ(launch->nproc, 3);
  EXPECT_EQ(LaunchOn({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LaunchOn({"cpu:0", "cuda:0"}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onset::worker
