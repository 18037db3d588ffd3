#include "cli/commands/cell_commands.h"

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
  // A running cell can be rerun: its attempt is fenced off and a new one starts.
  ASSERT_TRUE(ParseStates("running", &error)) << error;
  EXPECT_FALSE(ParseStates("failed,queued", &error));
  EXPECT_EQ(error,
            "--state: 'queued' is not a state a cell can be rerun from (failed, diverged, "
            "cancelled, succeeded, backoff, running)");
}

}  // namespace
}  // namespace onset::cli

namespace onset::cli {
namespace {

TEST(CellCommandsTest, FiltersCellsByStateAndAxes) {
  v1::GetStudyResponse study;
  auto add = [&](const std::string& id, v1::CellState state, const std::string& arch) {
    v1::Cell* c = study.add_cells();
    c->set_id(id);
    c->set_state(state);
    (*c->mutable_axes())["arch"] = arch;
  };
  add("a", v1::CELL_STATE_FAILED, "swa");
  add("b", v1::CELL_STATE_FAILED, "full");
  add("c", v1::CELL_STATE_SUCCEEDED, "swa");
  std::string error;
  FilterCells(*ParseAnyStates("failed", &error), *ParseWhere("arch=swa", &error), &study);
  ASSERT_EQ(study.cells_size(), 1);
  EXPECT_EQ(study.cells(0).id(), "a");
  EXPECT_FALSE(ParseAnyStates("done", &error));
  EXPECT_NE(error.find("unknown state 'done'"), std::string::npos);
  EXPECT_EQ(ParseAnyStates("backoff,running", &error)->size(), 2u);
}

}  // namespace
}  // namespace onset::cli
