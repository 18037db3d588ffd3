#include "coordinator/planning/trunk_plan.h"

#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "coordinator/study/study_file.h"
#include "model/config/wsd_trunk.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A WSD study of seq_len 64 and 1024 tokens per step (16 sequences), four budgets.
std::string Study(const std::string& train_extra,
                  const std::string& tokens = "[40K, 80K, 160K, 320K]",
                  const std::string& seeds = "1") {
  return "name: t\n"
         "model: {layers: 1, d_model: 32, heads: 2, seq_len: 64}\n"
         "train: {batch_tokens: 1024, schedule: wsd, decay_fraction: 0.2" +
         train_extra +
         "}\n"
         "eval: {niah_samples: 0}\n"
         "grid:\n"
         "  arch: [full]\n"
         "  tokens: " +
         tokens + "\n  seeds: " + seeds + "\n";
}

TrunkPlanRequest Request(const std::string& yaml) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile("t.yaml", yaml);
  EXPECT_TRUE(spec.ok()) << spec.status();
  TrunkPlanRequest request;
  request.cells = spec->cells;
  request.share_trunk = spec->share_trunk;
  request.share_trunk_where = "t.yaml:" + std::to_string(spec->share_trunk_line);
  return request;
}

std::vector<const CellSpec*> OfRole(const TrunkPlan& plan, CellRole role) {
  std::vector<const CellSpec*> out;
  for (const CellSpec& c : plan.cells) {
    if (c.role == role) out.push_back(&c);
  }
  return out;
}

model::TrunkSpec SpecOf(const CellSpec& trunk) {
  model::TrunkSpec spec;
  EXPECT_FALSE(model::ParseTrunkSpec(nlohmann::json::parse(trunk.config_json), &spec));
  return spec;
}

TEST(TrunkPlanTest, FourBudgetsShareOneTrunkThatEndsAtTheLargestBranchPoint) {
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(Study(", warmup_tokens: 8K")));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->notes, IsEmpty());
  const auto trunks = OfRole(*plan, CellRole::kTrunk);
  const auto branches = OfRole(*plan, CellRole::kBranch);
  ASSERT_EQ(trunks.size(), 1u);
  ASSERT_EQ(branches.size(), 4u);
  // The trunk comes first, before the branches it serves.
  EXPECT_EQ(plan->cells.front().role, CellRole::kTrunk);
  // Decay starts at 0.8 B: 32000, 64000, 128000, 256000 tokens; the branch point is the last
  // step boundary at or before it (32000 is 31.25 steps of 1024: 31744; 64000 is 62.5: 63488).
  std::vector<int64_t> points;
  for (const CellSpec* b : branches) {
    EXPECT_EQ(b->trunk_id, trunks[0]->id);
    points.push_back(b->branch_tokens);
  }
  EXPECT_THAT(points, ElementsAre(31744, 63488, 128000, 256000));
  const model::TrunkSpec spec = SpecOf(*trunks[0]);
  EXPECT_EQ(spec.until, 256000);
  EXPECT_EQ(trunks[0]->tokens_budget, 256000);
  EXPECT_THAT(spec.branch_points, ElementsAre(31744, 63488, 128000, 256000));
  EXPECT_EQ(spec.cell.train.tokens, 320000);  // its largest branch's config
  // Every branch's eval points before its branch point (default: every B/4, at the first
  // step end at or beyond each), and no other: 40K's 10K, 20K, 30K; 80K's 20K, 40K, 60K;
  // 160K's 40K, 80K, 120K; 320K's 80K, 160K, 240K.
  EXPECT_THAT(spec.eval_at,
              ElementsAre(10240, 20480, 30720, 40960, 60416, 80896, 120832, 160768, 240640));
  EXPECT_EQ(plan->tokens_without_sharing, 600000);
  EXPECT_EQ(plan->tokens_to_train,
            256000 + (40000 - 31744) + (80000 - 63488) + (160000 - 128000) + (320000 - 256000));
}

TEST(TrunkPlanTest, EachSeedHasItsOwnTrunk) {
  absl::StatusOr<TrunkPlan> plan =
      PlanTrunks(Request(Study(", warmup_tokens: 8K", "[40K, 80K]", "2")));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto trunks = OfRole(*plan, CellRole::kTrunk);
  ASSERT_EQ(trunks.size(), 2u);
  EXPECT_NE(trunks[0]->id, trunks[1]->id);
  EXPECT_EQ(OfRole(*plan, CellRole::kBranch).size(), 4u);
}

TEST(TrunkPlanTest, OneBudgetRunsOnItsOwn) {
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(Study(", warmup_tokens: 8K", "[40K]")));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->cells.size(), 1u);
  EXPECT_EQ(plan->cells[0].role, CellRole::kCell);
  EXPECT_EQ(plan->tokens_to_train, plan->tokens_without_sharing);
  EXPECT_THAT(plan->notes, IsEmpty());
}

TEST(TrunkPlanTest, ABudgetThatDecaysFromItsFirstStepRunsOnItsOwn) {
  // 1.5K tokens with decay_fraction 0.5 (set per budget by a zip) decays from 750 tokens,
  // inside the first step of 1024.
  const std::string yaml =
      "name: t\n"
      "model: {layers: 1, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 1024, schedule: wsd, warmup_tokens: 512}\n"
      "eval: {niah_samples: 0}\n"
      "grid:\n"
      "  zip: {tokens: [1500, 40K, 80K], train.decay_fraction: [0.5, 0.2, 0.2]}\n";
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(yaml));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(OfRole(*plan, CellRole::kTrunk).size(), 1u);
  EXPECT_EQ(OfRole(*plan, CellRole::kBranch).size(), 2u);
  ASSERT_EQ(OfRole(*plan, CellRole::kCell).size(), 1u);
  EXPECT_EQ(OfRole(*plan, CellRole::kCell)[0]->tokens_budget, 1500);
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("budget 1500 decays from its first step"));
}

TEST(TrunkPlanTest, DecayFractionsShareOneTrunkWithABranchPointEach) {
  const std::string yaml =
      "name: t\n"
      "model: {layers: 1, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 1024, schedule: wsd, warmup_tokens: 4K, tokens: 100K}\n"
      "eval: {niah_samples: 0, every_tokens: 10K}\n"
      "grid:\n"
      "  train.decay_fraction: [0.1, 0.5]\n";
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(yaml));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto trunks = OfRole(*plan, CellRole::kTrunk);
  ASSERT_EQ(trunks.size(), 1u);
  EXPECT_THAT(SpecOf(*trunks[0]).branch_points, ElementsAre(49152, 89088));
}

TEST(TrunkPlanTest, ABudgetWithMoreEvalPointsThanATrunkHoldsRunsOnItsOwn) {
  // eval.every_tokens 1 on 1024-token steps: an eval after every step, 150,000 steps before
  // the largest budget's decay, more than a trunk holds; the smaller budget's 31 fit.
  const std::string yaml =
      "name: t\n"
      "model: {layers: 1, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 1024, schedule: wsd, warmup_tokens: 8K, decay_fraction: 0.2}\n"
      "eval: {niah_samples: 0, every_tokens: 1}\n"
      "grid: {tokens: [40K, 80K, 192M]}\n";
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(yaml));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(OfRole(*plan, CellRole::kCell).size(), 1u);
  EXPECT_EQ(OfRole(*plan, CellRole::kCell)[0]->tokens_budget, 192'000'000);
  EXPECT_EQ(OfRole(*plan, CellRole::kBranch).size(), 2u);
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("budget 192000000 evaluates at too many points"));
}

TEST(TrunkPlanTest, CosineStudiesAreUnchanged) {
  const std::string yaml =
      "name: t\n"
      "model: {layers: 1, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 1024, warmup_tokens: 8K}\n"
      "eval: {niah_samples: 0}\n"
      "grid: {tokens: [40K, 80K]}\n";
  TrunkPlanRequest request = Request(yaml);
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->cells.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(plan->cells[i].role, CellRole::kCell);
    EXPECT_EQ(plan->cells[i].id, request.cells[i].id);
    EXPECT_EQ(plan->cells[i].config_json, request.cells[i].config_json);
  }
  EXPECT_EQ(plan->tokens_to_train, 120000);
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("cosine schedule's curve depends on the budget"));
}

// A field that `depends` on the budget is a display axis: its budgets are points of their own.
TEST(TrunkPlanTest, ACosineBudgetAmongWsdOnesRunsOnItsOwn) {
  const std::string yaml =
      "name: t\n"
      "model: {layers: 1, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 1024, warmup_tokens: 8K}\n"
      "eval: {niah_samples: 0}\n"
      "grid: {tokens: [40K, 80K, 160K]}\n"
      "depends:\n"
      "  train.schedule: {by: tokens, values: {40K: cosine}, default: wsd}\n";
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(yaml));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(OfRole(*plan, CellRole::kTrunk).size(), 1u);  // 80K and 160K share
  EXPECT_EQ(OfRole(*plan, CellRole::kBranch).size(), 2u);
  ASSERT_EQ(OfRole(*plan, CellRole::kCell).size(), 1u);
  EXPECT_EQ(OfRole(*plan, CellRole::kCell)[0]->tokens_budget, 40000);
  EXPECT_THAT(plan->notes, IsEmpty());
}

TEST(TrunkPlanTest, TheDefaultWarmupKeepsBudgetsApartAndSaysWhichSettingToChange) {
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(Study("")));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(OfRole(*plan, CellRole::kTrunk), IsEmpty());
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("differ in train.warmup_tokens: 2000 vs 4000"));
  EXPECT_THAT(plan->notes[0], HasSubstr("set train.warmup_tokens"));
  EXPECT_EQ(plan->tokens_to_train, plan->tokens_without_sharing);
}

TEST(TrunkPlanTest, AskingForSharingThatCannotBeIsRefusedWithTheReason) {
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(Request(Study(", share_trunk: true")));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("t.yaml:3: train.share_trunk: true, but"));
  EXPECT_THAT(plan.status().message(), HasSubstr("train.warmup_tokens"));
}

TEST(TrunkPlanTest, ShareTrunkFalseRunsEveryBudgetOnItsOwn) {
  absl::StatusOr<TrunkPlan> plan =
      PlanTrunks(Request(Study(", warmup_tokens: 8K, share_trunk: false")));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->cells.size(), 4u);
  EXPECT_THAT(OfRole(*plan, CellRole::kCell).size(), 4u);
  EXPECT_THAT(plan->notes, IsEmpty());
  EXPECT_EQ(plan->tokens_to_train, 600000);
}

TEST(TrunkPlanTest, ShareTrunkIsNotPartOfTheCells) {
  TrunkPlanRequest shared = Request(Study(", warmup_tokens: 8K"));
  TrunkPlanRequest alone = Request(Study(", warmup_tokens: 8K, share_trunk: false"));
  ASSERT_EQ(shared.cells.size(), alone.cells.size());
  for (size_t i = 0; i < shared.cells.size(); ++i) {
    EXPECT_EQ(shared.cells[i].id, alone.cells[i].id);
  }
}

TEST(TrunkPlanTest, WithoutSharedCheckpointsNothingIsShared) {
  TrunkPlanRequest request = Request(Study(", warmup_tokens: 8K"));
  request.shared_checkpoints = false;
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(OfRole(*plan, CellRole::kTrunk), IsEmpty());
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("--checkpoint-root"));
}

// The stored state of a study planned from `yaml`, as the store would return it.
std::vector<StoredPlanCell> Stored(const TrunkPlan& plan, CellState trunk_state) {
  std::vector<StoredPlanCell> out;
  for (const CellSpec& c : plan.cells) {
    StoredPlanCell s;
    s.id = c.id;
    s.role = c.role;
    s.trunk_id = c.trunk_id;
    s.branch_tokens = c.branch_tokens;
    s.tokens_budget = c.tokens_budget;
    s.state = c.role == CellRole::kTrunk ? trunk_state : CellState::kSucceeded;
    if (c.role == CellRole::kTrunk) s.config_json = c.config_json;
    out.push_back(s);
  }
  return out;
}

TEST(TrunkPlanTest, ALargerBudgetAddedLaterExtendsTheStoredTrunk) {
  absl::StatusOr<TrunkPlan> first =
      PlanTrunks(Request(Study(", warmup_tokens: 8K", "[40K, 80K, 160K]")));
  ASSERT_TRUE(first.ok());
  TrunkPlanRequest again = Request(Study(", warmup_tokens: 8K", "[40K, 80K, 160K, 320K]"));
  again.stored = Stored(*first, CellState::kSucceeded);
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(again);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->notes, IsEmpty());
  const auto trunks = OfRole(*plan, CellRole::kTrunk);
  ASSERT_EQ(trunks.size(), 1u);  // the extended spec, to store over the old one
  EXPECT_EQ(trunks[0]->id, OfRole(*first, CellRole::kTrunk)[0]->id);
  const model::TrunkSpec spec = SpecOf(*trunks[0]);
  EXPECT_EQ(spec.until, 256000);
  EXPECT_THAT(spec.branch_points, ElementsAre(31744, 63488, 128000, 256000));
  EXPECT_THAT(spec.eval_at,
              ElementsAre(10240, 20480, 30720, 40960, 60416, 80896, 120832, 160768, 240640));
  const auto branches = OfRole(*plan, CellRole::kBranch);
  EXPECT_EQ(branches.size(), 4u);
}

// A stored trunk holding as many branch points as a trunk spec may (ParseTrunkSpec's bound): a
// new budget does not add one more, which would make the trunk unreadable and every later
// submission of the study fail; it trains on its own.
TEST(TrunkPlanTest, ATrunkFullOfBranchPointsTakesNoMore) {
  absl::StatusOr<TrunkPlan> first =
      PlanTrunks(Request(Study(", warmup_tokens: 8K", "[40K, 80K, 160K]")));
  ASSERT_TRUE(first.ok());
  std::vector<StoredPlanCell> stored = Stored(*first, CellState::kSucceeded);
  for (StoredPlanCell& s : stored) {
    if (s.role != CellRole::kTrunk) continue;
    nlohmann::json spec = nlohmann::json::parse(s.config_json);
    nlohmann::json& trunk = spec["trunk"];
    // Step boundaries (1024 tokens a step) from step 1000 on, past every planned point.
    std::vector<int64_t> points = trunk["branch_points"].get<std::vector<int64_t>>();
    for (int64_t step = 1000; points.size() < model::kMaxTrunkPoints; ++step) {
      points.push_back(step * 1024);
    }
    trunk["branch_points"] = points;
    trunk["until"] = points.back();
    s.config_json = spec.dump();
    model::TrunkSpec parsed;
    ASSERT_FALSE(model::ParseTrunkSpec(spec, &parsed));  // full, and still readable
  }
  TrunkPlanRequest again = Request(Study(", warmup_tokens: 8K", "[40K, 80K, 160K, 320K]"));
  again.stored = stored;
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(again);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("budget 320000 trains on its own: the trunk"));
  EXPECT_THAT(plan->notes[0], HasSubstr("already has 100000 branch points"));
  EXPECT_THAT(OfRole(*plan, CellRole::kTrunk), IsEmpty());  // the stored spec stays as it is
  EXPECT_EQ(OfRole(*plan, CellRole::kBranch).size(), 3u);
}

TEST(TrunkPlanTest, ResubmittingTheSameFileChangesNothing) {
  absl::StatusOr<TrunkPlan> first = PlanTrunks(Request(Study(", warmup_tokens: 8K")));
  ASSERT_TRUE(first.ok());
  TrunkPlanRequest again = Request(Study(", warmup_tokens: 8K"));
  again.stored = Stored(*first, CellState::kRunning);
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(again);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(OfRole(*plan, CellRole::kTrunk), IsEmpty());  // nothing to store again
  EXPECT_EQ(OfRole(*plan, CellRole::kBranch).size(), 4u);
  EXPECT_EQ(plan->tokens_to_train, first->tokens_to_train);
}

TEST(TrunkPlanTest, ASmallerBudgetAddedLaterWhoseBranchPointTheTrunkPassedRunsOnItsOwn) {
  absl::StatusOr<TrunkPlan> first =
      PlanTrunks(Request(Study(", warmup_tokens: 8K", "[80K, 160K]")));
  ASSERT_TRUE(first.ok());
  TrunkPlanRequest again = Request(Study(", warmup_tokens: 8K", "[50K, 80K, 160K]"));
  again.stored = Stored(*first, CellState::kRunning);
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(again);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(OfRole(*plan, CellRole::kCell).size(), 1u);
  EXPECT_EQ(OfRole(*plan, CellRole::kCell)[0]->tokens_budget, 50000);
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("budget 50000 trains on its own"));
}

TEST(TrunkPlanTest, ANewBudgetDoesNotJoinATrunkThatFailedForGood) {
  absl::StatusOr<TrunkPlan> first = PlanTrunks(Request(Study(", warmup_tokens: 8K", "[40K, 80K]")));
  ASSERT_TRUE(first.ok());
  TrunkPlanRequest again = Request(Study(", warmup_tokens: 8K", "[40K, 80K, 160K]"));
  again.stored = Stored(*first, CellState::kFailed);
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(again);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(OfRole(*plan, CellRole::kCell).size(), 1u);
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("failed"));
}

}  // namespace
}  // namespace onset::coordinator
