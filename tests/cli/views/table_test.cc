#include "cli/views/table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/views/style.h"

namespace onset::cli {
namespace {

TEST(TableTest, AlignsColumns) {
  Table table({"NAME", "N"});
  table.AlignRight(1);
  table.AddRow({"a", "1"});
  table.AddRow({"longer", "100"});
  EXPECT_EQ(table.Render(),
            "NAME      N\n"
            "a         1\n"
            "longer  100\n");
}

TEST(TableTest, ColouredCellsAlignByWhatShows) {
  Table table({"STATE", "N"});
  table.AddRow({Style{true}.State(v1::CELL_STATE_FAILED), "1"});
  table.AddRow({"succeeded", "2"});
  EXPECT_EQ(table.Render(),
            "STATE      N\n"
            "\x1b[31mfailed\x1b[0m     1\n"
            "succeeded  2\n");
}

TEST(FormatTest, Tokens) {
  EXPECT_EQ(FormatTokens(950), "950");
  EXPECT_EQ(FormatTokens(20000), "20K");
  EXPECT_EQ(FormatTokens(20480), "20.5K");
  EXPECT_EQ(FormatTokens(1500000), "1.5M");
  EXPECT_EQ(FormatTokens(250000), "250K");
  EXPECT_EQ(FormatTokens(2000000000), "2B");
  EXPECT_EQ(FormatTokens(0), "0");
}

TEST(FormatTest, Flops) {
  EXPECT_EQ(FormatFlops(2.346e15), "2.35e15");
  EXPECT_EQ(FormatFlops(1e18), "1e18");
  EXPECT_EQ(FormatFlops(1.2e5), "1.2e5");
  EXPECT_EQ(FormatFlops(950), "950");
}

TEST(FormatTest, TruncateFlattensAndCuts) {
  EXPECT_EQ(Truncate("exit code 1", 40), "exit code 1");
  EXPECT_EQ(Truncate("a\nb", 40), "a b");
  EXPECT_EQ(Truncate("0123456789", 8), "01234...");
}

}  // namespace
}  // namespace onset::cli
