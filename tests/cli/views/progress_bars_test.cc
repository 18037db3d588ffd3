#include "cli/views/progress_bars.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProgressBarsTest, ABarPerRunningCellAndTheStudyLine) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  v1::Cell* running = study.add_cells();
  running->set_id("0123456789abcdef");
  running->set_state(v1::CELL_STATE_RUNNING);
  running->set_tokens_done(500);
  running->set_tokens_budget(1000);
  running->set_tokens_per_second(100);
  (*running->mutable_axes())["arch"] = "swa";
  v1::Cell* done = study.add_cells();
  done->set_id("fedcba9876543210");
  done->set_state(v1::CELL_STATE_SUCCEEDED);
  done->set_tokens_budget(1000);
  const std::string bars = ProgressBars(study, 100);
  EXPECT_THAT(bars, HasSubstr("01234567 arch=swa"));
  EXPECT_THAT(bars, HasSubstr("[##########..........] 50% 500/1K 100 tok/s ETA 5s"));
  EXPECT_THAT(bars, Not(HasSubstr("fedcba98")));  // ended cells have no bar
  EXPECT_THAT(bars, HasSubstr("demo: tokens 1.5K/2K (75%)"));
  EXPECT_LE(bars.find('\n'), 100u);  // the bar line fits the width
}

TEST(ProgressBarsTest, TheLiveBlockReplacesItselfAndKeepsLinesAbove) {
  LiveBlock block;
  EXPECT_EQ(block.Redraw("a\nb\n"), "a\nb\n");
  EXPECT_EQ(block.Redraw("c\n"), "\x1b[2A\x1b[Jc\n");         // up over two lines, clear, redraw
  EXPECT_EQ(block.Above("event\n"), "\x1b[1A\x1b[Jevent\n");  // the event stays above
  EXPECT_EQ(block.Redraw("d\n"), "d\n");
  EXPECT_EQ(block.Clear(), "\x1b[1A\x1b[J");
  EXPECT_EQ(block.Clear(), "");
}

}  // namespace
}  // namespace onset::cli
