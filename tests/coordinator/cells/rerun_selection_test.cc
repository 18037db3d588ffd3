#include "coordinator/cells/rerun_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RerunSelectionTest, PlainRerunPicksCellsThatEndedWithoutAResult) {
  EXPECT_THAT(DefaultRerunStates(),
              ElementsAre(CellState::kFailed, CellState::kDiverged, CellState::kCancelled));
  absl::StatusOr<std::vector<CellState>> states = RerunStates({});
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_EQ(*states, DefaultRerunStates());
}

TEST(RerunSelectionTest, NamedStatesReplaceTheDefaults) {
  absl::StatusOr<std::vector<CellState>> states =
      RerunStates({CellState::kSucceeded, CellState::kBackoff});
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_THAT(*states, ElementsAre(CellState::kSucceeded, CellState::kBackoff));
}

TEST(RerunSelectionTest, RunningCellsAreRerunOnlyWhenNamed) {
  absl::StatusOr<std::vector<CellState>> states = RerunStates({CellState::kRunning});
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_THAT(*states, ElementsAre(CellState::kRunning));
}

TEST(RerunSelectionTest, QueuedAndUnknownStatesAreRefused) {
  for (std::optional<CellState> bad :
       {std::optional<CellState>(CellState::kQueued), std::optional<CellState>()}) {
    absl::StatusOr<std::vector<CellState>> states = RerunStates({CellState::kFailed, bad});
    ASSERT_FALSE(states.ok());
    EXPECT_EQ(states.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(states.status().message()),
                HasSubstr("states: queued cells run already"));
  }
}

}  // namespace
}  // namespace onset::coordinator
