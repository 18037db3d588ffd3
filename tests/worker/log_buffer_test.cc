#include "worker/log_buffer.h"

#include <gtest/gtest.h>

namespace onset::worker {
namespace {

TEST(LogBufferTest, NumbersLinesFromOneAndHandsThemOutInOrder) {
  LogBuffer buffer;
  buffer.Add("a", 10);
  buffer.Add("b", 11);
  buffer.Add("c", 12);
  std::vector<LogLine> first = buffer.Take(2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].line, 1);
  EXPECT_EQ(first[0].text, "a");
  EXPECT_EQ(first[1].at_unix_ms, 11);
  EXPECT_EQ(buffer.pending(), 1u);
  buffer.PutBack(first);  // a failed send: they go first again
  std::vector<LogLine> all = buffer.Take(10);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].line, 1);
  EXPECT_EQ(all[2].line, 3);
  EXPECT_EQ(buffer.pending(), 0u);
}

TEST(LogBufferTest, DropsTheOldestUnsentLinesBeyondItsBound) {
  LogBuffer buffer(3);
  for (int i = 0; i < 5; ++i) buffer.Add("x" + std::to_string(i), 0);
  EXPECT_EQ(buffer.dropped(), 2);
  std::vector<LogLine> kept = buffer.Take(10);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].line, 3);  // numbers stay, so a reader sees the gap
  EXPECT_EQ(kept[0].text, "x2");
  buffer.Add("y", 0);
  buffer.PutBack(kept);  // 4 lines for 3 places: the oldest goes
  EXPECT_EQ(buffer.dropped(), 3);
  EXPECT_EQ(buffer.Take(10).front().line, 4);
}

}  // namespace
}  // namespace onset::worker
