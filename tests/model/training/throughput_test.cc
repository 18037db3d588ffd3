#include "model/training/throughput.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace onset::model {
namespace {

using Metrics = std::map<std::string, double>;

// 6000 FLOPs a token on 2 ranks of 1 MFLOP/s each.
Throughput TwoRanks() {
  Throughput t(/*flops_per_token=*/6000, /*world_size=*/2);
  t.set_peak_flops(1e6);
  return t;
}

TEST(ThroughputTest, TheWindowIsTheStepsSinceTheLastTrainEvent) {
  Throughput t = TwoRanks();
  t.AddStep(/*seconds=*/0.5, /*tokens=*/512, /*loss=*/4.0);
  t.AddStep(1.5, 512, 2.0);
  // Loss (4 + 2) / 2; 1024 tokens in 2 s; 512 * 6000 / (1e6 * 2).
  Metrics first = t.TakeWindow();
  EXPECT_EQ(first.size(), 3u);
  EXPECT_DOUBLE_EQ(first.at("train/loss"), 3.0);
  EXPECT_DOUBLE_EQ(first.at("train/tokens_per_second"), 512.0);
  EXPECT_DOUBLE_EQ(first.at("train/mfu"), 1.536);
  // A new window: only the step after it.
  t.AddStep(0.25, 512, 1.0);
  Metrics second = t.TakeWindow();
  EXPECT_DOUBLE_EQ(second.at("train/loss"), 1.0);
  EXPECT_DOUBLE_EQ(second.at("train/tokens_per_second"), 2048.0);
  EXPECT_DOUBLE_EQ(second.at("train/mfu"), 6.144);
}

TEST(ThroughputTest, TotalsCountTheWholeRun) {
  Throughput t = TwoRanks();
  t.AddStep(0.5, 512, 4.0);
  t.TakeWindow();
  t.AddStep(1.5, 512, 2.0);
  EXPECT_DOUBLE_EQ(t.seconds(), 2.0);
  // 3072 tokens (1024 of them resumed ones, say) over 2 s of training.
  const Metrics done = t.Totals(3072);
  EXPECT_EQ(done.size(), 3u);
  EXPECT_DOUBLE_EQ(done.at("train/tokens_per_second"), 1536.0);
  EXPECT_DOUBLE_EQ(done.at("train/seconds"), 2.0);
  EXPECT_DOUBLE_EQ(done.at("train/mfu"), 4.608);
}

TEST(ThroughputTest, NoMfuWithoutAPeakOrWithoutTime) {
  Throughput unknown_peak(6000, 1);
  unknown_peak.AddStep(1.0, 512, 2.0);
  EXPECT_EQ(unknown_peak.Totals(512),
            (Metrics{{"train/tokens_per_second", 512.0}, {"train/seconds", 1.0}}));
  EXPECT_EQ(unknown_peak.TakeWindow(),
            (Metrics{{"train/loss", 2.0}, {"train/tokens_per_second", 512.0}}));

  Throughput untimed = TwoRanks();  // a step too fast for the clock
  untimed.AddStep(0.0, 512, 2.0);
  EXPECT_EQ(untimed.TakeWindow(), (Metrics{{"train/loss", 2.0}, {"train/tokens_per_second", 0.0}}));
  EXPECT_EQ(untimed.Totals(512),
            (Metrics{{"train/tokens_per_second", 0.0}, {"train/seconds", 0.0}}));
}

TEST(ThroughputTest, TheBookkeepingTravelsInACheckpoint) {
  Throughput before = TwoRanks();
  before.AddStep(0.5, 512, 4.0);
  before.TakeWindow();
  before.AddStep(1.5, 512, 2.0);
  before.AddStep(1.0, 256, 3.0);
  TrainProgress progress;
  before.SaveTo(&progress);
  EXPECT_EQ(progress.train_seconds, 3.0);
  EXPECT_EQ(progress.window_loss_sum, 5.0);
  EXPECT_EQ(progress.window_steps, 2);
  EXPECT_EQ(progress.window_tokens, 768);
  EXPECT_EQ(progress.window_seconds, 2.5);

  Throughput after = TwoRanks();
  after.RestoreFrom(progress);
  EXPECT_EQ(after.seconds(), before.seconds());
  EXPECT_EQ(after.Totals(1280), before.Totals(1280));
  EXPECT_EQ(after.TakeWindow(), before.TakeWindow());
}

}  // namespace
}  // namespace onset::model
