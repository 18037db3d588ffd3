// A study at the documented cell limit (100,000 cells), end to end with the real onsetd and onset:
// submit, status, results, watch and export all answer, within gRPC's message size limits.
// Skips when a binary is missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "coordinator/study/grid.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using testing::Start;
using worker::PosixProcessLauncher;

// seeds x train.lr values of a tiny model: exactly `cells` cells.
std::string StudyOf(int cells) {
  const int seeds = 100;
  std::string yaml =
      "name: wide\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
      "train: {tokens: 1M, batch_tokens: 512}\neval: {niah_samples: 0}\ngrid:\n  seeds: " +
      std::to_string(seeds) + "\n  train.lr: [";
  for (int i = 0; i < cells / seeds; ++i) {
    char lr[32];
    std::snprintf(lr, sizeof lr, "%.7g", 1e-4 * (1.0 + i / 1000.0));
    yaml += (i ? ", " : "") + std::string(lr);
  }
  return yaml + "]\n";
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

class StudyLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("onset-limit-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs `onset --coordinator ... ARGS`; returns its exit code, its stdout in *out.
  int Onset(const std::vector<std::string>& args, std::string* out) {
    std::vector<std::string> all = {"--coordinator", daemon_.address, "--token-file",
                                    daemon_.token_file};
    all.insert(all.end(), args.begin(), args.end());
    Child child = Start(launcher_, "onset", all, dir_.string());
    const testing::Ran ran = testing::Finish(child, std::chrono::minutes(5));
    if (ran.code != 0) ADD_FAILURE() << ran.err;
    *out = ran.out;
    return ran.code;
  }

  fs::path dir_;
  PosixProcessLauncher launcher_;
  testing::Daemon daemon_;
};

TEST_F(StudyLimitTest, EveryCommandWorksOnAStudyOfTheLimitsSize) {
  std::string missing;
  if (!HaveBinaries({"onsetd", "onset"}, &missing)) GTEST_SKIP() << missing << " not built";
  constexpr int kCells = static_cast<int>(coordinator::kMaxGridPoints);
  daemon_ = testing::StartDaemon(launcher_, dir_);
  ASSERT_FALSE(daemon_.address.empty() || daemon_.token.empty());

  const fs::path file = dir_ / "wide.yaml";
  std::ofstream(file) << StudyOf(kCells);
  std::string out;
  // Each answer of these was one message of ~12 MB before, over gRPC's 4 MB limit.
  const std::string n = std::to_string(kCells);
  ASSERT_EQ(Onset({"submit", file.string()}, &out), 0);
  EXPECT_THAT(out, HasSubstr(n + " cells, " + n + " new"));

  ASSERT_EQ(Onset({"status", "wide"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("wide: " + n + " cells: " + n + " queued"));
  EXPECT_GE(Lines(out), kCells);

  ASSERT_EQ(Onset({"results", "wide"}, &out), 0);
  EXPECT_GE(Lines(out), kCells);

  // Cancelled, every cell has ended: the watch takes the snapshot (in pieces) and exits.
  ASSERT_EQ(Onset({"cancel", "wide"}, &out), 0);
  Child watch =
      Start(launcher_, "onset",
            {"--coordinator", daemon_.address, "--token-file", daemon_.token_file, "watch", "wide"},
            dir_.string());
  ASSERT_TRUE(watch.process);
  EXPECT_EQ(watch.process->Wait().exit_code, 3) << watch.process->StderrTail();
  EXPECT_THAT(watch.Out(), HasSubstr("wide: " + n + " cells: " + n + " cancelled"));

  ASSERT_EQ(Onset({"export", "wide"}, &out), 0);
  EXPECT_EQ(daemon_.child.process->Terminate(std::chrono::seconds(30)).exit_code, 0);
}

}  // namespace
}  // namespace onset
