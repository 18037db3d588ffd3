#include "model/training/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onset::model {
namespace {

// 1000 tokens, 100 of warmup, peak 1, floor 0.1; WSD decays over the last 200 tokens.
TrainConfig Train(const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json train = {{"tokens", 1000},
                          {"batch_tokens", 256},
                          {"lr", 1.0},
                          {"min_lr_ratio", 0.1},
                          {"warmup_tokens", 100}};
  train.update(extra);
  CellConfig c;
  auto e = ParseCellConfig({{"train", train}}, &c);
  EXPECT_FALSE(e) << e->ToString();
  return c.train;
}

TEST(LrScheduleTest, WarmupThenCosineToTheFloor) {
  LrSchedule s = LrSchedule::FromConfig(Train());
  EXPECT_EQ(s.kind, LrSchedule::Kind::kCosine);
  EXPECT_DOUBLE_EQ(s.At(0), 0.0);
  EXPECT_DOUBLE_EQ(s.At(50), 0.5);
  EXPECT_DOUBLE_EQ(s.At(100), 1.0);
  EXPECT_NEAR(s.At(550), 0.55, 1e-12);  // half way: floor + (peak - floor) / 2
  EXPECT_NEAR(s.At(1000), 0.1, 1e-12);
  EXPECT_NEAR(s.At(5000), 0.1, 1e-12);
}

TEST(LrScheduleTest, WsdHoldsThePeakThenDecaysLinearly) {
  LrSchedule s = LrSchedule::FromConfig(Train({{"schedule", "wsd"}}));
  EXPECT_EQ(s.kind, LrSchedule::Kind::kWsd);
  EXPECT_EQ(s.decay_start, 800);
  EXPECT_DOUBLE_EQ(s.At(50), 0.5);
  EXPECT_DOUBLE_EQ(s.At(100), 1.0);
  EXPECT_DOUBLE_EQ(s.At(500), 1.0);
  EXPECT_DOUBLE_EQ(s.At(799), 1.0);
  EXPECT_DOUBLE_EQ(s.At(800), 1.0);
  EXPECT_NEAR(s.At(900), 0.55, 1e-12);
  EXPECT_NEAR(s.At(950), 0.325, 1e-12);
  EXPECT_NEAR(s.At(1000), 0.1, 1e-12);
  EXPECT_NEAR(s.At(2000), 0.1, 1e-12);
}

TEST(LrScheduleTest, WsdDecayShapes) {
  LrSchedule cosine =
      LrSchedule::FromConfig(Train({{"schedule", "wsd"}, {"decay_shape", "cosine"}}));
  EXPECT_NEAR(cosine.At(850), 0.8681980515339464, 1e-12);  // 0.1 + 0.9 (1 + cos(pi / 4)) / 2
  EXPECT_NEAR(cosine.At(900), 0.55, 1e-12);
  EXPECT_NEAR(cosine.At(1000), 0.1, 1e-12);
  LrSchedule sqrt = LrSchedule::FromConfig(
      Train({{"schedule", "wsd"}, {"decay_shape", "sqrt"}, {"decay_fraction", 0.4}}));
  EXPECT_EQ(sqrt.decay_start, 600);
  EXPECT_DOUBLE_EQ(sqrt.At(600), 1.0);
  EXPECT_NEAR(sqrt.At(650), 0.6818019484660537, 1e-12);   // p = 1/8: 0.1 + 0.9 (1 - sqrt(p))
  EXPECT_NEAR(sqrt.At(800), 0.36360389693210715, 1e-12);  // p = 1/2
  EXPECT_NEAR(sqrt.At(1000), 0.1, 1e-12);
}

// The step that ends where the decay starts trains at the stable phase's rate, bit for bit,
// whatever the floor: a WSD trunk trains it at the peak for every budget it shares.
// floor + (peak - floor) rounds away from 1e-2 with the floor at 10%.
TEST(LrScheduleTest, WsdRateAtTheDecayStartIsExactlyThePeak) {
  for (const char* shape : {"linear", "cosine", "sqrt"}) {
    const LrSchedule s =
        LrSchedule::FromConfig(Train({{"schedule", "wsd"}, {"lr", 1e-2}, {"decay_shape", shape}}));
    EXPECT_EQ(s.At(800), 1e-2) << shape;
    EXPECT_LT(s.At(801), 1e-2) << shape;
  }
}

TEST(LrScheduleTest, TheStablePhaseWarmsUpAndNeverDecays) {
  const TrainConfig train = Train({{"schedule", "wsd"}, {"lr", 1e-2}});
  const LrSchedule wsd = LrSchedule::FromConfig(train);
  const LrSchedule stable = LrSchedule::StablePhase(train);
  for (int64_t t : {0, 1, 50, 99, 100, 500, 800}) EXPECT_EQ(stable.At(t), wsd.At(t)) << t;
  for (int64_t t : {int64_t{801}, int64_t{1000}, int64_t{1'000'000'000'000}})
    EXPECT_EQ(stable.At(t), 1e-2) << t;
  // A cosine cell's warmup is the same, though no trunk trains one.
  const LrSchedule cosine = LrSchedule::StablePhase(Train());
  EXPECT_DOUBLE_EQ(cosine.At(50), 0.5);
  EXPECT_EQ(cosine.At(5000), 1.0);
}

TEST(LrScheduleTest, ConfigValidatesTheSchedule) {
  auto parse = [](const nlohmann::json& train) {
    CellConfig c;
    auto e = ParseCellConfig({{"train", train}}, &c);
    return e ? e->ToString() : std::string();
  };
  EXPECT_EQ(parse({{"schedule", "step"}}),
            "train.schedule: unknown schedule 'step': expected cosine or wsd");
  EXPECT_EQ(parse({{"decay_shape", "exp"}}),
            "train.decay_shape: unknown shape 'exp': expected linear, cosine or sqrt");
  EXPECT_EQ(parse({{"schedule", "wsd"}, {"decay_fraction", 0}}),
            "train.decay_fraction: must leave at least one token of decay (> 0)");
  EXPECT_EQ(parse({{"schedule", "wsd"}, {"decay_fraction", 1.5}}),
            "train.decay_fraction: must be between 0.0 and 1.0");
  EXPECT_EQ(parse({{"tokens", 1000}, {"schedule", "wsd"}, {"warmup_tokens", 900}}),
            "train.warmup_tokens: must end before the decay starts at 800 tokens");
  EXPECT_EQ(parse({{"tokens", 1000}, {"keep_checkpoints_at", {500, 2000}}}),
            "train.keep_checkpoints_at: every entry must be a token count between 1 and 1000");

  // Canonical form: WSD fields only matter under wsd; checkpoint cadence is resolved.
  CellConfig a, b;
  ASSERT_FALSE(ParseCellConfig({{"train", {{"tokens", 1000}, {"decay_shape", "sqrt"}}}}, &a));
  ASSERT_FALSE(ParseCellConfig({{"train", {{"tokens", 1000}}}}, &b));
  EXPECT_EQ(a.CanonicalText(), b.CanonicalText());
  EXPECT_EQ(b.ToJson()["train"]["checkpoint_every_tokens"], 250);
  EXPECT_EQ(b.ToJson()["train"]["schedule"], "cosine");
  CellConfig w;
  ASSERT_FALSE(ParseCellConfig(
      {{"train",
        {{"tokens", "1M"}, {"schedule", "wsd"}, {"keep_checkpoints_at", {"600K", 300000}}}}},
      &w));
  EXPECT_EQ(w.ToJson()["train"]["keep_checkpoints_at"], nlohmann::json({300000, 600000}));
}

}  // namespace
}  // namespace onset::model
