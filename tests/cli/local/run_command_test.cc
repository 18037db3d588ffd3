// onset run's default number of CPU slots: one single-threaded trainer per core
// (docs/cpu-benchmark.md measures why).
#include "cli/local/run_command.h"

#include <gtest/gtest.h>

namespace onset::cli {
namespace {

TEST(RunCommandTest, OneSlotPerCore) {
  EXPECT_EQ(DefaultWorkers(1), 1);
  EXPECT_EQ(DefaultWorkers(2), 2);
  EXPECT_EQ(DefaultWorkers(16), 16);
  EXPECT_EQ(DefaultWorkers(0), 2);  // not known
}

}  // namespace
}  // namespace onset::cli
