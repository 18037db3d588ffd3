#include "cli/views/progress_log.h"

#include <gtest/gtest.h>

namespace onset::cli {
namespace {

TEST(ProgressLogTest, TokensAloneArePrintedAtMostEveryInterval) {
  ProgressLog log(10'000);
  EXPECT_EQ(log.Take("demo: 2 cells: 1 running, 1 queued | 01234567 10K/1M", 0),
            "demo: 2 cells: 1 running, 1 queued | 01234567 10K/1M\n");
  EXPECT_EQ(log.Take("demo: 2 cells: 1 running, 1 queued | 01234567 20K/1M", 500), "");
  EXPECT_EQ(log.Take("demo: 2 cells: 1 running, 1 queued | 01234567 90K/1M", 9'999), "");
  EXPECT_EQ(log.Take("demo: 2 cells: 1 running, 1 queued | 01234567 95K/1M", 10'000),
            "demo: 2 cells: 1 running, 1 queued | 01234567 95K/1M\n");
  EXPECT_EQ(log.Take("demo: 2 cells: 1 running, 1 queued | 01234567 99K/1M", 12'000), "");
}

TEST(ProgressLogTest, AStateChangeIsPrintedAtOnce) {
  ProgressLog log(10'000);
  EXPECT_NE(log.Take("demo: 2 cells: 1 running, 1 queued | 01234567 10K/1M", 0), "");
  EXPECT_EQ(log.Take("demo: 2 cells: 1 succeeded, 1 running | 89abcdef 0/1M", 100),
            "demo: 2 cells: 1 succeeded, 1 running | 89abcdef 0/1M\n");
  EXPECT_EQ(log.Take("demo: 2 cells: 2 succeeded", 200), "demo: 2 cells: 2 succeeded\n");
}

TEST(ProgressLogTest, AnUnchangedOrEmptyLineIsNeverRepeated) {
  ProgressLog log(10'000);
  EXPECT_EQ(log.Take("", 0), "");
  EXPECT_NE(log.Take("demo: 1 cells: 1 queued", 0), "");
  EXPECT_EQ(log.Take("demo: 1 cells: 1 queued", 60'000), "");
  EXPECT_EQ(log.Take("", 70'000), "");
}

}  // namespace
}  // namespace onset::cli
