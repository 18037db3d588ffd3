#include "coordinator/cells/checkpoint_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(CheckpointLayoutTest, CellsLiveUnderRootStudyCell) {
  absl::StatusOr<std::string> dir = CellCheckpointDir("/ckpt", "small", "3f2a9c");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, "/ckpt/small/3f2a9c");
}

TEST(CheckpointLayoutTest, NoRootLeavesTheChoiceToTheWorker) {
  absl::StatusOr<std::string> dir = CellCheckpointDir("", "small", "3f2a9c");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, "");
}

TEST(CheckpointLayoutTest, NamesThatLeaveTheRootAreRefused) {
  for (const auto& [study, cell] : std::vector<std::pair<std::string, std::string>>{
           {"..", "c"}, {"a/b", "c"}, {"s", ".."}, {"s", "/etc"}, {"", "c"}, {"-rf", "c"}}) {
    absl::StatusOr<std::string> dir = CellCheckpointDir("/ckpt", study, cell);
    ASSERT_FALSE(dir.ok()) << study << "/" << cell << " gave " << *dir;
    EXPECT_EQ(dir.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(dir.status().message()), HasSubstr("/ckpt")) << study << "/" << cell;
  }
}

}  // namespace
}  // namespace onset::coordinator
