#include "proto/cell_names.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace onset::wire {
namespace {

// Every state of the wire's enum has one name, which reads back as that state, and the list of
// states misses none.
TEST(CellNamesTest, EveryStateHasOneNameThatReadsBack) {
  std::set<std::string> names;
  for (int value = v1::CellState_MIN; value <= v1::CellState_MAX; ++value) {
    if (!v1::CellState_IsValid(value) || value == v1::CELL_STATE_UNSPECIFIED) continue;
    const auto state = static_cast<v1::CellState>(value);
    const std::string_view name = StateName(state);
    EXPECT_NE(name, "unspecified") << value;
    names.insert(std::string(name));
    EXPECT_EQ(StateFromName(name), state) << name;
  }
  EXPECT_EQ(names.size(), kCellStates.size());
  EXPECT_EQ(StateName(v1::CELL_STATE_UNSPECIFIED), "unspecified");
  EXPECT_EQ(StateFromName("unspecified"), std::nullopt);
  EXPECT_EQ(StateFromName("Queued"), std::nullopt);
}

TEST(CellNamesTest, OnlyTheFourFinalStatesHaveEnded) {
  std::set<std::string> ended;
  for (v1::CellState state : kCellStates) {
    if (Ended(state)) ended.insert(std::string(StateName(state)));
  }
  EXPECT_EQ(ended, (std::set<std::string>{"succeeded", "failed", "diverged", "cancelled"}));
  EXPECT_FALSE(Ended(v1::CELL_STATE_UNSPECIFIED));
}

TEST(CellNamesTest, RolesReadBackAndAnUnnamedRoleIsACell) {
  for (CellRole role : {CellRole::kCell, CellRole::kTrunk, CellRole::kBranch}) {
    EXPECT_EQ(RoleFromName(RoleName(role)), role);
  }
  EXPECT_EQ(RoleName(CellRole::kBranch), "branch");
  v1::Cell cell;
  EXPECT_EQ(RoleOf(cell), CellRole::kCell);
  cell.set_role("trunk");
  EXPECT_EQ(RoleOf(cell), CellRole::kTrunk);
  cell.set_role("sapling");
  EXPECT_EQ(RoleOf(cell), CellRole::kCell);
}

}  // namespace
}  // namespace onset::wire
