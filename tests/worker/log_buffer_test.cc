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

TEST(LogBufferTest, KeepsAsManyUnsentLinesAsTheCoordinatorKeepsOfAnAttempt) {
  LogBuffer buffer;
  for (int i = 1; i <= 25'000; ++i) buffer.Add("line " + std::to_string(i), 0);
  EXPECT_EQ(buffer.pending(), 20'000u);
  EXPECT_EQ(buffer.dropped(), 5'000);
  EXPECT_EQ(buffer.Take(1).front().text, "line 5001");
}

TEST(LogBufferTest, IsBoundedInBytesToo) {
  LogBuffer buffer(/*max_lines=*/100, /*max_bytes=*/1000);
  for (int i = 0; i < 20; ++i) buffer.Add(std::string(100, 'a' + i), 0);
  EXPECT_EQ(buffer.pending(), 10u);
  EXPECT_EQ(buffer.dropped(), 10);
  EXPECT_EQ(buffer.Take(1).front().text[0], 'k');
}

TEST(LogBufferTest, TakesBatchesBoundedInBytesButNeverNone) {
  LogBuffer buffer;
  buffer.Add(std::string(5000, 'x'), 0);
  buffer.Add(std::string(600, 'y'), 0);
  buffer.Add(std::string(600, 'z'), 0);
  EXPECT_EQ(buffer.Take(10, 1000).size(), 1u);  // a first line over the bound goes alone
  EXPECT_EQ(buffer.Take(10, 1000).size(), 1u);  // 600 + 600 > 1000
  EXPECT_EQ(buffer.Take(10, 1000).size(), 1u);
  EXPECT_EQ(buffer.pending(), 0u);
}

}  // namespace
}  // namespace onset::worker
