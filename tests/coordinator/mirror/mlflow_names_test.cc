#include "coordinator/mirror/mlflow_names.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace onset::coordinator {
namespace {

TEST(MlflowNameTest, OnsetsNamesBecomeNamesMlflowTakes) {
  EXPECT_EQ(MlflowName("train/loss"), "train/loss");
  EXPECT_EQ(MlflowName("niah/acc@512"), "niah/acc_at_512");
  EXPECT_EQ(MlflowName("niah/acc_depth@0.5"), "niah/acc_depth_at_0.5");
  EXPECT_EQ(MlflowName("rh/score/l3h7"), "rh/score/l3h7");
  EXPECT_EQ(MlflowName("a:b*c"), "a_b_c");  // ':' is refused on Windows servers
  // Names MLflow would read as another path keep no '/'.
  EXPECT_EQ(MlflowName("a//b"), "a__b");
  EXPECT_EQ(MlflowName("/a"), "_a");
  EXPECT_EQ(MlflowName("../a"), ".._a");
  EXPECT_EQ(MlflowName(""), "_");
  EXPECT_EQ(MlflowName(std::string(400, 'x')).size(), 250u);
}

TEST(MlflowParamsTest, TheAxesThenEveryLeafOfTheConfig) {
  const auto params =
      MlflowParams({{"arch", "swa"}, {"seed", "1"}},
                   R"({"model":{"layers":2,"pattern":"FS"},"eval":{"niah_lengths":[64,128]},)"
                   R"("train":{"lr":0.003,"wsd":{}}})");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"arch", "swa"},
      {"seed", "1"},
      {"config.eval.niah_lengths", "[64,128]"},
      {"config.model.layers", "2"},
      {"config.model.pattern", "FS"},
      {"config.train.lr", "0.003"},
      {"config.train.wsd", "{}"}};
  EXPECT_EQ(params, expected);
  EXPECT_EQ(MlflowParams({{"arch", "swa"}}, "not json").size(), 1u);
  const auto long_value = MlflowParams({{"a", std::string(7000, 'x')}}, "");
  EXPECT_EQ(long_value[0].second.size(), 6000u);
  EXPECT_EQ(long_value[0].second.substr(5997), "...");
}

TEST(MlflowRunStatusTest, RunningUntilTheCellEnds) {
  EXPECT_STREQ(MlflowRunStatus(CellState::kQueued), "RUNNING");
  EXPECT_STREQ(MlflowRunStatus(CellState::kRunning), "RUNNING");
  EXPECT_STREQ(MlflowRunStatus(CellState::kBackoff), "RUNNING");
  EXPECT_STREQ(MlflowRunStatus(CellState::kSucceeded), "FINISHED");
  EXPECT_STREQ(MlflowRunStatus(CellState::kFailed), "FAILED");
  EXPECT_STREQ(MlflowRunStatus(CellState::kDiverged), "FAILED");
  EXPECT_STREQ(MlflowRunStatus(CellState::kCancelled), "KILLED");
}

}  // namespace
}  // namespace onset::coordinator
