#include "tests/sim/journal.h"

#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace onset::sim {
namespace {

TEST(JournalTest, LinesRoundTripAndSpacesCannotSplitThem) {
  testutil::TempDir dir;
  JournalEntry e;
  e.at_unix_ms = 1234;
  e.kind = "VIOLATION";
  e.cell = "00c0ffee";
  e.attempt = 3;
  e.pid = 42;
  e.fields = {{"what", "another trainer of this cell runs"}, {"run", "7"}};
  Append(dir.path(), e);
  e.kind = "END";
  e.fields = {{"how", "done"}};
  Append(dir.path(), e);
  const std::vector<JournalEntry> read = ReadJournal(dir.path());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].at_unix_ms, 1234);
  EXPECT_EQ(read[0].kind, "VIOLATION");
  EXPECT_EQ(read[0].cell, "00c0ffee");
  EXPECT_EQ(read[0].attempt, 3);
  EXPECT_EQ(read[0].pid, 42);
  EXPECT_EQ(read[0].Field("what"), "another_trainer_of_this_cell_runs");
  EXPECT_EQ(read[0].Field("run"), "7");
  EXPECT_EQ(read[1].Field("how"), "done");
  EXPECT_EQ(read[1].Field("nothing"), "");
  EXPECT_FALSE(ParseJournalLine("not a journal line").has_value());
}

}  // namespace
}  // namespace onset::sim
