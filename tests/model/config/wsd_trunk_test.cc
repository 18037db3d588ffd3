#include "model/config/wsd_trunk.h"

#include "base/cell_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// seq_len 64, 1024 tokens per step, WSD with a 20% decay and a fixed warmup.
CellConfig Wsd(int64_t tokens) {
  nlohmann::json j = {
      {"model", {{"layers", 1}, {"d_model", 32}, {"heads", 2}, {"seq_len", 64}}},
      {"train",
       {{"tokens", tokens}, {"batch_tokens", 1024}, {"schedule", "wsd"}, {"warmup_tokens", 4096}}},
      {"eval", {{"niah_samples", 0}}}};
  CellConfig c;
  const auto error = ParseCellConfig(j, &c);
  EXPECT_FALSE(error) << error->ToString();
  return c;
}

TEST(WsdTrunkTest, TokensPerStepIsWholeSequences) {
  CellConfig c = Wsd(100'000);
  EXPECT_EQ(TokensPerStep(c), 1024);
  c.train.batch_tokens = 1000;  // 15 sequences of 64
  EXPECT_EQ(TokensPerStep(c), 960);
  c.train.batch_tokens = 10;  // at least one sequence
  EXPECT_EQ(TokensPerStep(c), 64);
}

TEST(WsdTrunkTest, TheBranchPointIsTheLastStepBoundaryAtOrBeforeTheDecay) {
  EXPECT_EQ(BranchPoint(Wsd(100'000)), 79'872);   // decay at 80000 = 78.125 steps: 78 steps
  EXPECT_EQ(BranchPoint(Wsd(128'000)), 102'400);  // decay at 102400 = exactly 100 steps
  CellConfig c = Wsd(100'000);
  c.train.tokens = 1'500;
  c.train.decay_fraction = 0.5;
  EXPECT_EQ(BranchPoint(c), 0);  // decay at 750, inside the first step
}

TEST(WsdTrunkTest, EvalStepEndsAreTheFirstStepEndsAtOrBeyondEachPoint) {
  CellConfig c = Wsd(100'000);  // default: every 25000 tokens
  EXPECT_THAT(*EvalStepEnds(c, 79'872), ElementsAre(25'600, 50'176, 75'776));
  EXPECT_THAT(*EvalStepEnds(c, 1'000'000), ElementsAre(25'600, 50'176, 75'776, 100'352));
  EXPECT_THAT(*EvalStepEnds(c, 25'599), ElementsAre());
  // Two points inside one step evaluate once, after that step.
  c.eval.every_tokens = 300;
  EXPECT_THAT(*EvalStepEnds(c, 3'072), ElementsAre(1'024, 2'048, 3'072));
  EXPECT_FALSE(EvalStepEnds(c, 100'000, /*limit=*/10).has_value());
}

TEST(WsdTrunkTest, LogSpacedEvalStepEnds) {
  CellConfig c = Wsd(100'000);
  c.eval.log_points = 3;
  c.eval.log_start = 1'000;  // 1000, 10000, 100000
  EXPECT_THAT(*EvalStepEnds(c, 79'872), ElementsAre(1'024, 10'240));
}

TEST(WsdTrunkTest, BudgetsOfOneStablePhaseShareATrunkIdAndOthersDoNot) {
  const CellConfig a = Wsd(100'000);
  CellConfig b = Wsd(400'000);
  b.train.decay_fraction = 0.1;
  b.train.decay_shape = "sqrt";
  b.train.min_lr_ratio = 0.0;
  b.eval.every_tokens = 7'000;
  b.train.keep_checkpoints_at = {1'000};
  EXPECT_EQ(TrunkIdOf(a), TrunkIdOf(b));
  EXPECT_EQ(StablePhaseDifference(a, b), "");
  EXPECT_NE(TrunkIdOf(a), base::CellIdOf(a.CanonicalText()));

  CellConfig lr = a;
  lr.train.lr = 1e-3;
  EXPECT_NE(TrunkIdOf(a), TrunkIdOf(lr));
  EXPECT_EQ(StablePhaseDifference(a, lr), "train.lr: 0.003 vs 0.001");
  CellConfig seed = a;
  seed.train.seed = 1;
  EXPECT_NE(TrunkIdOf(a), TrunkIdOf(seed));
  CellConfig warmup = a;
  warmup.train.warmup_tokens = 0;  // 5% of the budget
  EXPECT_THAT(StablePhaseDifference(a, warmup), HasSubstr("train.warmup_tokens: 4096 vs 5000"));
}

// The budget fields are the one list of what a trunk ignores: each must name a field the
// canonical config has (a renamed field would silently stop being ignored), and dropping them
// must leave nothing that differs between two budgets of one stable phase.
TEST(WsdTrunkTest, EveryBudgetFieldIsAFieldOfTheCanonicalConfig) {
  const nlohmann::json canonical = Wsd(1'000'000).ToJson();
  for (std::string_view field : BudgetFields()) {
    const nlohmann::json::json_pointer pointer("/" + std::string(field.substr(0, field.find('.'))) +
                                               "/" +
                                               std::string(field.substr(field.find('.') + 1)));
    EXPECT_TRUE(canonical.contains(pointer)) << field;
    EXPECT_FALSE(StablePhaseJson(canonical).contains(pointer)) << field;
  }
  EXPECT_EQ(StablePhaseJson(Wsd(1'000'000).ToJson()), StablePhaseJson(Wsd(3'000'000).ToJson()));
}

TEST(WsdTrunkTest, TrunkSpecReadsBackWhatItWrites) {
  TrunkSpec spec;
  spec.cell = Wsd(400'000);
  spec.until = 319'488;
  spec.eval_at = {25'600, 100'352};
  spec.branch_points = {79'872, 319'488};
  ASSERT_TRUE(IsTrunkSpecJson(spec.ToJson()));
  EXPECT_FALSE(IsTrunkSpecJson(spec.cell.ToJson()));
  TrunkSpec back;
  const auto error = ParseTrunkSpec(spec.ToJson(), &back);
  ASSERT_FALSE(error) << error->ToString();
  EXPECT_EQ(back.until, spec.until);
  EXPECT_EQ(back.eval_at, spec.eval_at);
  EXPECT_EQ(back.branch_points, spec.branch_points);
  EXPECT_EQ(back.cell.CanonicalText(), spec.cell.CanonicalText());
}

TEST(WsdTrunkTest, TrunkSpecErrorsNameTheKey) {
  TrunkSpec spec;
  spec.cell = Wsd(400'000);
  spec.until = 319'488;
  spec.eval_at = {25'600};
  spec.branch_points = {79'872, 319'488};
  auto error_of = [](nlohmann::json j) {
    TrunkSpec out;
    const auto error = ParseTrunkSpec(j, &out);
    return error ? error->ToString() : std::string("accepted");
  };
  nlohmann::json j = spec.ToJson();
  j["trunk"]["until"] = 1000;
  EXPECT_THAT(error_of(j), HasSubstr("trunk.until: 1000 is not a positive step boundary"));
  j = spec.ToJson();
  j["trunk"]["eval_at"] = {1024, 1024};
  EXPECT_EQ(error_of(j), "trunk.eval_at: must increase");
  j = spec.ToJson();
  j["trunk"]["branch_points"] = {79'872};
  EXPECT_EQ(error_of(j), "trunk.branch_points: must end at trunk.until");
  j = spec.ToJson();
  j["trunk"]["eval_at"] = {400'384};
  EXPECT_THAT(error_of(j), HasSubstr("trunk.eval_at: 400384 is not a step boundary"));
  j = spec.ToJson();
  j["trunk"]["extra"] = 1;
  EXPECT_EQ(error_of(j), "trunk.extra: unknown key");
  j = spec.ToJson();
  j["cell"]["train"]["schedule"] = "cosine";
  EXPECT_THAT(error_of(j), HasSubstr("cell.train.schedule: a trunk trains a wsd schedule"));
  j = spec.ToJson();
  j["cell"]["train"]["lrr"] = 1;
  EXPECT_THAT(error_of(j), HasSubstr("cell.train.lrr: unknown key"));
}

}  // namespace
}  // namespace onset::model
