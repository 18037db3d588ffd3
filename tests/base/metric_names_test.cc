// The metric names' contract: each pattern's parser reads back what its formatter writes and
// refuses near misses, and no source but base/metric_names.{h,cc} spells a metric name.
#include "base/metric_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace onset::metric {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(MetricNamesTest, TheHeadlineIsTheFirstNiahAccuracyElseTheTrainingLossElseTheFirst) {
  EXPECT_EQ(HeadlineMetric({"train/loss", "niah/acc@512", "niah/acc", "eval/heldout_loss"}),
            "niah/acc");
  EXPECT_EQ(HeadlineMetric({"train/loss", "niah/acc@512", "niah/acc@1024"}), "niah/acc@1024");
  EXPECT_EQ(HeadlineMetric({"train/lr", "train/loss", "eval/heldout_loss"}), "train/loss");
  EXPECT_EQ(HeadlineMetric({"train/lr", "eval/heldout_loss"}), "eval/heldout_loss");
  EXPECT_EQ(HeadlineMetric({}), "");
}

TEST(MetricNamesTest, LengthsRoundTripAndNearMissesAreRefused) {
  EXPECT_EQ(AtLength(kNiahAcc, 512), "niah/acc@512");
  EXPECT_EQ(LengthOf(AtLength(kNiahAcc, 512), kNiahAcc), 512);
  EXPECT_EQ(LengthOf(AtLength(kKeySwapRate, 0), kKeySwapRate), 0);
  for (const char* bad : {"niah/acc", "niah/acc@", "niah/acc@-1", "niah/acc@12x", "niah/acc@ 1",
                          "niah/acc_depth@0.5", "niah/acc@99999999999"}) {
    EXPECT_EQ(LengthOf(bad, kNiahAcc), std::nullopt) << bad;
  }
}

TEST(MetricNamesTest, HeadsRoundTripAndNearMissesAreRefused) {
  EXPECT_EQ(HeadName(kRhScore, 3, 7), "rh/score/l3h7");
  const std::optional<Head> head = ParseHeadName(HeadName(kRhScore, 12, 0), kRhScore);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->layer, 12);
  EXPECT_EQ(head->head, 0);
  EXPECT_TRUE(ParseHeadName(HeadName(kAblationDrop, 1, 2), kAblationDrop).has_value());
  for (const char* bad :
       {"rh/score/l3h7x", "rh/score/l3", "rh/score/lh7", "rh/score/l-1h2", "rh/score/3h7",
        "rh/scores/l3h7", "rh/max_full", "ablation/selection/drop/l1h2"}) {
    EXPECT_FALSE(ParseHeadName(bad, kRhScore).has_value()) << bad;
  }
}

TEST(MetricNamesTest, DepthsAndGroupsAreNamedAsDocumented) {
  EXPECT_EQ(AtDepth(kNiahAccDepth, 0.5), "niah/acc_depth@0.5");
  EXPECT_EQ(AtDepth(kNiahAccDepth, 1), "niah/acc_depth@1");
  EXPECT_TRUE(IsAtDepth(AtDepth(kNiahAccDepth, 0.25), kNiahAccDepth));
  EXPECT_FALSE(IsAtDepth(kNiahAccDepth, kNiahAccDepth));
  EXPECT_EQ(GroupAcc(VariantGroup("multi_value")), "niah/multi_value/acc");
  EXPECT_EQ(AblationKindAcc("full"), "ablation/full/niah_acc");
  EXPECT_EQ(AblationKindHeads("efficient"), "ablation/efficient/heads");
  EXPECT_EQ(SpreadMean(kAblationRandomK), "ablation/random_k/niah_acc_mean");
  EXPECT_EQ(SpreadDraws(kAblationRandomKAnyMix), "ablation/random_k_any_mix/draws");
}

TEST(MetricNamesTest, ControlsGoWithNiahAccuracyOnly) {
  EXPECT_THAT(ControlsOf(AtLength(kNiahAcc, 256)),
              ElementsAre(AtLength(kKeySwapRate, 256), AtLength(kDistractorCopyRate, 256)));
  EXPECT_THAT(ControlsOf(kNiahAcc), ElementsAre(kKeySwapRate, kDistractorCopyRate));
  EXPECT_THAT(ControlsOf(kNiahAccBeyondWindow), ElementsAre(kKeySwapRate, kDistractorCopyRate));
  EXPECT_THAT(ControlsOf(kHeldoutLoss), IsEmpty());
  EXPECT_THAT(ControlsOf(GroupAcc(VariantGroup("single"))), IsEmpty());
  EXPECT_TRUE(IsKeySwap(kKeySwapRate));
  EXPECT_TRUE(IsKeySwap(AtLength(kKeySwapRate, 64)));
  EXPECT_FALSE(IsKeySwap(kDistractorCopyRate));
}

TEST(MetricNamesTest, FamiliesSayWhatAnEvaluationWrites) {
  for (const char* name : {kHeldoutLoss, kNiahAcc, kRhMaxFull, kAblationTopKAcc}) {
    EXPECT_TRUE(IsEvaluationMetric(name)) << name;
  }
  for (const char* name : {kTrainLoss, kModelParams, kCheckpointBytes}) {
    EXPECT_FALSE(IsEvaluationMetric(name)) << name;
  }
  // What measures the machine, which two runs of one cell need not share; never a result.
  for (const char* name : {kTrainTokensPerSecond, kTrainMfu, kTrainSeconds, kEvalSeconds,
                           kCheckpointSeconds, kTrainPeakRssBytes, kTrainPeakCudaBytes}) {
    EXPECT_TRUE(DescribesTheMachine(name)) << name;
  }
  for (const char* name : {kTrainLoss, kTrainGradNorm, kTrainLr, kNiahAcc, kCheckpointBytes}) {
    EXPECT_FALSE(DescribesTheMachine(name)) << name;
  }
  EXPECT_TRUE(IsSpreadDetail(SpreadStd(kAblationRandomK)));
  EXPECT_FALSE(IsSpreadDetail(SpreadMean(kAblationRandomK)));
}

// `text` without its comments (// to the end of a line, /* ... */).
std::string WithoutComments(const std::string& text) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == quote || c == '\n') {
        quote = 0;
      }
    } else if (c == '"' || c == '`') {
      quote = c;
      out += c;
    } else if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
      out += '\n';
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 1;
    } else {
      out += c;
    }
  }
  return out;
}

// Every place a metric name starts a string (or a URL parameter's value) in the C++ sources and
// the dashboard, outside base/metric_names.{h,cc}: a rename there would compile and silently
// empty a column. Tests spell names to check what is written; docs define them.
TEST(MetricNamesTest, NoOtherSourceSpellsAMetricName) {
  const fs::path root = ONSET_SOURCE_DIR;
  const std::regex spelled(
      R"re([="'`]((train|eval|niah|rh|ablation|checkpoint)/|model/(params|non_embedding_params)\b))re");
  std::vector<std::string> found;
  int files = 0;
  for (const char* dir : {"analysis", "base", "bench", "cli", "common", "coordinator", "db",
                          "kernels", "model", "proto", "worker"}) {
    if (!fs::exists(root / dir)) continue;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root / dir)) {
      const fs::path& path = entry.path();
      const std::string ext = path.extension().string();
      if (ext != ".cc" && ext != ".h" && ext != ".cu" && ext != ".cuh" && ext != ".html" &&
          ext != ".js") {
        continue;
      }
      const std::string relative = fs::relative(path, root).string();
      if (relative == "base/metric_names.h" || relative == "base/metric_names.cc") continue;
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      ++files;
      const std::string code = WithoutComments(text.str());
      std::istringstream lines(code);
      std::string line;
      for (int n = 1; std::getline(lines, line); ++n) {
        if (line.rfind("#include", 0) == 0) continue;
        if (std::regex_search(line, spelled)) found.push_back(relative + ":" + std::to_string(n));
      }
    }
  }
  EXPECT_GT(files, 100) << "the sources were not found under " << root;
  EXPECT_THAT(found, IsEmpty()) << "spell metric names through base/metric_names.h";
}

}  // namespace
}  // namespace onset::metric
