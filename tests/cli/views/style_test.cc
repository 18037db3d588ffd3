#include "cli/views/style.h"

#include <gtest/gtest.h>

namespace onset::cli {
namespace {

TEST(StyleTest, VisibleWidthIgnoresEscapesAndCountsCharacters) {
  EXPECT_EQ(VisibleWidth("\x1b[31mfailed\x1b[0m"), 6u);
  EXPECT_EQ(VisibleWidth("plain"), 5u);
  EXPECT_EQ(VisibleWidth("\xc3\xa9t\xc3\xa9"), 3u);  // "été"
  EXPECT_EQ(Style{true}.State(v1::CELL_STATE_QUEUED), "queued");
  EXPECT_EQ(Style{false}.State(v1::CELL_STATE_FAILED), "failed");
}

TEST(StyleTest, StatesAreColouredByWhatTheyMean) {
  EXPECT_EQ(Style{true}.State(v1::CELL_STATE_SUCCEEDED), "\x1b[32msucceeded\x1b[0m");
  EXPECT_EQ(Style{true}.State(v1::CELL_STATE_BACKOFF), "\x1b[33mbackoff\x1b[0m");
  EXPECT_EQ(Style{true}.State(v1::CELL_STATE_DIVERGED), "\x1b[35mdiverged\x1b[0m");
}

}  // namespace
}  // namespace onset::cli
