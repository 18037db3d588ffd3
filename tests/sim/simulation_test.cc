// The lifecycle simulator on a fixed set of seeds (kCiSeeds, which between them hold every kind
// of action): each runs the real onsetd, three onset-workers and the `onset` CLI under its
// schedule of faults (25-60 s each) and must break no promise of checks.h. A failing seed prints
// its schedule and keeps its files; `onset-lifecycle-sim --seed N` replays it. Skips when a binary
// is missing from ONSET_BIN_DIR.
#include "tests/sim/simulation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace onset::sim {
namespace {

namespace fs = std::filesystem;

std::string BinDir() {
  const char* dir = std::getenv("ONSET_BIN_DIR");
  return dir == nullptr ? "" : dir;
}

class SimulationTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SimulationTest, NoPromiseIsBroken) {
  for (const char* binary :
       {"onsetd", "onset-worker", "onset", "onset-sim-trainer", "libonset-sim-full-disk.so"}) {
    if (!fs::exists(fs::path(BinDir()) / binary)) GTEST_SKIP() << binary << " not built";
  }
  SimOptions options;
  options.seed = GetParam();
  options.bin_dir = BinDir();
  options.dir = (fs::temp_directory_path() /
                 ("onset-sim-" + std::to_string(::getpid()) + "-" + std::to_string(options.seed)))
                    .string();
  fs::remove_all(options.dir);
  const SimReport report = RunSimulation(options);
  EXPECT_TRUE(report.ok()) << report.Describe();
  // The faults did something: cells ran, attempts were lost or handed back, trainers restarted.
  EXPECT_GT(report.counts.attempts, options.cells) << report.Describe();
  std::cout << report.Describe();
}

INSTANTIATE_TEST_SUITE_P(Seeds, SimulationTest, ::testing::ValuesIn(kCiSeeds));

}  // namespace
}  // namespace onset::sim
