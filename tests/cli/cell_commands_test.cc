#include "cli/cell_commands.h"

#include <gtest/gtest.h>

namespace onset::cli {
namespace {

TEST(CellCommandsTest, ParsesWhere) {
  std::string error;
  auto where = ParseWhere("arch=swa,window=16,train.lr=1e-3", &error);
  ASSERT_TRUE(where) << error;
  EXPECT_EQ(where->at("arch"), "swa");
  EXPECT_EQ(where->at("window"), "16");
  EXPECT_EQ(where->at("train.lr"), "1e-3");
  EXPECT_TRUE(ParseWhere("", &error)->empty());
  for (const char* bad : {"arch", "arch=", "=swa", "arch=swa,,window=1"}) {
    EXPECT_FALSE(ParseWhere(bad, &error)) << bad;
    EXPECT_NE(error.find("is not AXIS=VALUE"), std::string::npos) << error;
  }
}

TEST(CellCommandsTest, ParsesRerunnableStates) {
  std::string error;
  auto states = ParseStates("failed,diverged,succeeded", &error);
  ASSERT_TRUE(states) << error;
  EXPECT_EQ(*states, (std::vector<v1::CellState>{v1::CELL_STATE_FAILED, v1::CELL_STATE_DIVERGED,
                                                 v1::CELL_STATE_SUCCEEDED}));
  EXPECT_TRUE(ParseStates("", &error)->empty());
  EXPECT_FALSE(ParseStates("failed,running", &error));
  EXPECT_EQ(error,
            "--state: 'running' is not a state a cell can be rerun from (failed, diverged, "
            "cancelled, succeeded, backoff)");
}

}  // namespace
}  // namespace onset::cli
