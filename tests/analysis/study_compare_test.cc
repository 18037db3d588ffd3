#include "analysis/study_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace onset::analysis {
namespace {

using Points = std::vector<std::pair<int64_t, double>>;

v1::Cell* AddCell(v1::GetStudyResponse* study, const std::string& id,
                  std::map<std::string, std::string> axes) {
  v1::Cell* c = study->add_cells();
  c->set_id(id);
  c->set_state(v1::CELL_STATE_SUCCEEDED);
  c->set_tokens_budget(4'000'000);
  for (const auto& [k, v] : axes) (*c->mutable_axes())[k] = v;
  return c;
}

void AddAlias(v1::Cell* cell, const std::string& axis, const std::string& value) {
  (*cell->mutable_axis_aliases())[axis].add_values(value);
}

// 0.2 at 1M, 0.8 at 4M: crosses 0.5 at 2M. 0.2 at 1M, 0.8 at 2M: at sqrt(2) M.
Points Slow() { return {{1'000'000, 0.2}, {4'000'000, 0.8}}; }
Points Fast() { return {{1'000'000, 0.2}, {2'000'000, 0.8}}; }

// The grid full x {rope, nope-full, nope} and swa x {rope, nope-full}, window 16, as the
// coordinator stores it: full with nope-full is the full nope cell, which records the alias.
v1::GetStudyResponse MergedSchemes(Curves* curves) {
  v1::GetStudyResponse s;
  s.mutable_study()->set_name("pos");
  v1::Cell* full_rope = AddCell(&s, "f-rope", {{"arch", "full"}, {"window", "-"}, {"pos", "rope"}});
  AddAlias(full_rope, "window", "16");
  v1::Cell* full_nope = AddCell(&s, "f-nope", {{"arch", "full"}, {"window", "-"}, {"pos", "nope"}});
  AddAlias(full_nope, "window", "16");
  AddAlias(full_nope, "pos", "nope-full");
  AddCell(&s, "s-rope", {{"arch", "swa"}, {"window", "16"}, {"pos", "rope"}});
  AddCell(&s, "s-nopefull", {{"arch", "swa"}, {"window", "16"}, {"pos", "nope-full"}});
  (*curves)["f-rope"]["m"] = Slow();
  (*curves)["f-nope"]["m"] = Slow();
  (*curves)["s-rope"]["m"] = Slow();
  (*curves)["s-nopefull"]["m"] = Fast();
  return s;
}

CompareSpec Spec() {
  CompareSpec spec;
  spec.metric = "m";
  spec.threshold = 0.5;
  spec.baseline = {"arch", "full"};
  return spec;
}

const CompareRow& Row(const CompareTable& t, const std::string& arch, const std::string& pos) {
  for (const CompareRow& r : t.rows) {
    if (r.axes.at("arch") == arch && r.axes.at("pos") == pos) return r;
  }
  ADD_FAILURE() << "no group " << arch << " " << pos;
  return t.rows.front();
}

TEST(StudyCompareTest, ABaselineValueNoCellHasIsRefusedNamingTheValues) {
  Curves curves;
  const v1::GetStudyResponse study = MergedSchemes(&curves);
  CompareSpec spec = Spec();
  spec.baseline = {"arch", "nope"};
  std::string error;
  const CompareTable table = Compare(study, curves, spec, &error);
  EXPECT_EQ(error, "--baseline: no cell of study pos has arch=nope (its values: full, swa)");
  EXPECT_TRUE(table.rows.empty());
  // A value a cell has only as an alias (the grid merged it) is one.
  spec.baseline = {"pos", "nope-full"};
  error.clear();
  Compare(study, curves, spec, &error);
  EXPECT_EQ(error, "");
}

TEST(StudyCompareTest, PairsThroughTheSchemesTheGridMerged) {
  Curves curves;
  const v1::GetStudyResponse study = MergedSchemes(&curves);
  std::string error;
  const CompareTable table = Compare(study, curves, Spec(), &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(table.rows.size(), 4u);
  // swa nope-full against the full cell that nope-full made (stored as nope): 2M / sqrt(2)M.
  const CompareRow& swa = Row(table, "swa", "nope-full");
  ASSERT_TRUE(swa.has_baseline);
  EXPECT_EQ(table.rows[swa.baseline_row].axes.at("pos"), "nope");
  EXPECT_EQ(swa.speed_up.kind, SpeedUp::kExact);
  EXPECT_NEAR(swa.speed_up.value, std::sqrt(2.0), 1e-9);
  // Direct matches stay: swa rope against full rope, full nope against itself.
  const CompareRow& rope = Row(table, "swa", "rope");
  ASSERT_TRUE(rope.has_baseline);
  EXPECT_EQ(table.rows[rope.baseline_row].axes.at("pos"), "rope");
  EXPECT_NEAR(rope.speed_up.value, 1.0, 1e-9);
  EXPECT_EQ(table.rows[Row(table, "full", "nope").baseline_row].axes.at("pos"), "nope");

  const nlohmann::json json = nlohmann::json::parse(CompareJson(table, Spec()));
  EXPECT_EQ(json["groups"][3]["speed_up"]["baseline_axes"]["pos"], "nope");
  EXPECT_EQ(json["groups"][1]["aliases"]["pos"][0], "nope-full");
}

TEST(StudyCompareTest, WithoutTheRecordedAliasesThereIsNoBaseline) {
  Curves curves;
  v1::GetStudyResponse study = MergedSchemes(&curves);
  for (v1::Cell& c : *study.mutable_cells()) c.clear_axis_aliases();  // an older database
  std::string error;
  const CompareTable table = Compare(study, curves, Spec(), &error);
  EXPECT_FALSE(Row(table, "swa", "nope-full").has_baseline);
  EXPECT_TRUE(Row(table, "swa", "rope").has_baseline);
}

TEST(StudyCompareTest, TheBaselineAxisIsAlwaysAGroupingAxis) {
  Curves curves;
  const v1::GetStudyResponse study = MergedSchemes(&curves);
  CompareSpec spec = Spec();
  spec.by = {"pos"};
  std::string error;
  const CompareTable table = Compare(study, curves, spec, &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(table.by, (std::vector<std::string>{"pos", "arch"}));
  EXPECT_TRUE(Row(table, "swa", "nope-full").has_baseline);
}

TEST(StudyCompareTest, FlopsToThresholdAndSpeedUpOnFlops) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("cost");
  AddCell(&study, "full", {{"arch", "full"}})->set_train_flops_per_token(3e6);
  v1::Cell* swa = AddCell(&study, "swa", {{"arch", "swa"}});
  swa->set_train_flops_per_token(1e6);
  swa->set_non_embedding_params(800'000);
  AddCell(&study, "old", {{"arch", "gdn"}});  // no FLOPs: an older coordinator
  Curves curves;
  curves["full"]["m"] = Slow();  // 2M tokens = 6e12 FLOPs
  curves["swa"]["m"] = Slow();   // 2M tokens = 2e12 FLOPs
  curves["old"]["m"] = Fast();
  CompareSpec spec = Spec();
  std::string error;
  CompareTable tokens = Compare(study, curves, spec, &error);
  EXPECT_EQ(tokens.rows.size(), 3u);
  EXPECT_NEAR(tokens.rows[1].speed_up.value, 1.0, 1e-9);
  EXPECT_EQ(tokens.rows[1].params->min, 800'000);
  EXPECT_FALSE(tokens.rows[0].params.has_value());
  EXPECT_EQ(tokens.rows[0].flops_per_token->max, 3e6);

  spec.x = XAxis::kFlops;
  const CompareTable flops = Compare(study, curves, spec, &error);
  ASSERT_EQ(flops.rows.size(), 2u);
  EXPECT_EQ(flops.cells_without_flops, 1);
  EXPECT_NEAR(flops.rows[0].summary.median.at, 6e12, 1e3);
  EXPECT_NEAR(flops.rows[1].summary.median.at, 2e12, 1e3);
  EXPECT_NEAR(flops.rows[1].speed_up.value, 3.0, 1e-9);
  // Censoring bounds scale alike: never reaching it within 4M tokens is "> 1.2e13" FLOPs.
  curves["full"]["m"] = {{1'000'000, 0.1}, {4'000'000, 0.2}};
  const CompareTable censored = Compare(study, curves, spec, &error);
  EXPECT_EQ(censored.rows[0].summary.median.kind, Crossing::kRight);
  EXPECT_NEAR(censored.rows[0].summary.median.at, 1.2e13, 1e3);
  const nlohmann::json json = nlohmann::json::parse(CompareJson(censored, spec));
  EXPECT_EQ(json["x"], "flops");
  EXPECT_EQ(json["groups"][0]["median"]["flops"], nullptr);
  EXPECT_NEAR(json["groups"][0]["median"]["censored_above"].get<double>(), 1.2e13, 1e3);
  EXPECT_EQ(json["groups"][1]["speed_up"]["kind"], "at_least");
  EXPECT_EQ(json["cells_without_flops"], 1);
}

TEST(StudyCompareTest, ALeftCensoredGroupIsABoundInJson) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("early");
  AddCell(&study, "full", {{"arch", "full"}});
  AddCell(&study, "swa", {{"arch", "swa"}});
  Curves curves;
  curves["full"]["m"] = Slow();
  curves["swa"]["m"] = {{250'000, 0.9}, {1'000'000, 1.0}};  // past it at the first point
  std::string error;
  const CompareTable table = Compare(study, curves, Spec(), &error);
  EXPECT_EQ(table.rows[1].summary.left_censored, 1);
  EXPECT_EQ(table.rows[1].speed_up.kind, SpeedUp::kAtLeast);
  EXPECT_NEAR(table.rows[1].speed_up.value, 8.0, 1e-9);
  const nlohmann::json json = nlohmann::json::parse(CompareJson(table, Spec()));
  const nlohmann::json& median = json["groups"][1]["median"];
  EXPECT_EQ(median["tokens"], nullptr);  // never the bound as a value
  EXPECT_EQ(median["censored_below"], 250000);
  EXPECT_FALSE(median.contains("censored_above"));
  EXPECT_EQ(json["groups"][1]["left_censored"], 1);
  EXPECT_EQ(json["groups"][1]["cells"][0]["crossing"]["censored_below"], 250000);
  EXPECT_EQ(json["groups"][1]["speed_up"]["kind"], "at_least");
}

TEST(StudyCompareTest, TheKeySwapControlBesideANiahAccuracyElseTheCopyRate) {
  EXPECT_EQ(ControlMetrics("niah/acc@256"),
            (std::vector<std::string>{"niah/control/key_swap_rate@256",
                                      "niah/control/distractor_copy_rate@256"}));
  EXPECT_EQ(ControlMetrics("niah/acc"),
            (std::vector<std::string>{"niah/control/key_swap_rate",
                                      "niah/control/distractor_copy_rate"}));
  EXPECT_EQ(ControlMetrics("niah/acc_beyond_window")[0], "niah/control/key_swap_rate");
  EXPECT_TRUE(ControlMetrics("eval/short_loss").empty());
  EXPECT_TRUE(ControlMetrics("niah/single/acc@256").empty());

  v1::GetStudyResponse study;
  study.mutable_study()->set_name("copy");
  AddCell(&study, "a0", {{"arch", "full"}, {"seed", "0"}});
  AddCell(&study, "a1", {{"arch", "full"}, {"seed", "1"}});
  AddCell(&study, "a2", {{"arch", "full"}, {"seed", "2"}});
  AddCell(&study, "b0", {{"arch", "swa"}, {"seed", "0"}});
  Curves curves;
  const std::string swap = "niah/control/key_swap_rate@256";
  const std::string copy = "niah/control/distractor_copy_rate@256";
  for (const char* id : {"a0", "a1", "a2", "b0"}) curves[id]["niah/acc@256"] = Slow();
  curves["a0"][swap] = {{1'000'000, 0.5}, {4'000'000, 0.0}};  // final: 0
  curves["a1"][swap] = {{4'000'000, 0.25}};
  curves["a2"][swap] = {{4'000'000, 0.75}};
  curves["a0"][copy] = {{4'000'000, 0.9}};
  CompareSpec spec;
  spec.metric = "niah/acc@256";
  spec.threshold = 0.5;
  std::string error;
  CompareTable table = Compare(study, curves, spec, &error);
  EXPECT_EQ(table.control_metric, swap);  // preferred over the copy rate
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(*table.rows[0].control_median, 0.25);  // median of the finals 0, 0.25, 0.75
  EXPECT_FALSE(table.rows[1].control_median.has_value());
  nlohmann::json json = nlohmann::json::parse(CompareJson(table, spec));
  EXPECT_EQ(json["control_metric"], swap);
  EXPECT_EQ(json["control_kind"], "key_swap");
  EXPECT_EQ(json["groups"][0]["control_final_median"], 0.25);
  EXPECT_EQ(json["groups"][1]["control_final_median"], nullptr);

  // A study measured before the key swap: the copy rate stands in.
  for (auto& [id, metrics] : curves) metrics.erase(swap);
  table = Compare(study, curves, spec, &error);
  EXPECT_EQ(table.control_metric, copy);
  EXPECT_EQ(*table.rows[0].control_median, 0.9);
  EXPECT_EQ(nlohmann::json::parse(CompareJson(table, spec))["control_kind"], "copy");
  // No cell reported either: no control column at all.
  for (auto& [id, metrics] : curves) metrics.erase(copy);
  table = Compare(study, curves, spec, &error);
  EXPECT_EQ(table.control_metric, "");
  json = nlohmann::json::parse(CompareJson(table, spec));
  EXPECT_FALSE(json.contains("control_metric"));
  EXPECT_FALSE(json["groups"][0].contains("control_final_median"));
}

// Seeds of a group as a survival curve: how many crossed, the Kaplan-Meier median (an
// unfinished cell censored where it is), crossings by eval point, and speed-ups from medians
// and seed-wise.
TEST(StudyCompareTest, SeedsAggregateAsEmergence) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("seeds");
  for (int s = 0; s < 3; ++s) {
    AddCell(&study, "f" + std::to_string(s), {{"arch", "full"}, {"seed", std::to_string(s)}});
    AddCell(&study, "d" + std::to_string(s), {{"arch", "gdn"}, {"seed", std::to_string(s)}});
  }
  Curves curves;
  curves["f0"]["m"] = {{1'000'000, 0.1}, {2'000'000, 0.2}, {4'000'000, 0.8}};  // 0.5 at ~2.8M
  curves["f1"]["m"] = {{1'000'000, 0.1}, {2'000'000, 0.2}, {4'000'000, 0.3}};  // > 4M
  curves["f2"]["m"] = {{1'000'000, 0.1}, {2'000'000, 0.2}, {4'000'000, 0.3}};  // > 4M
  curves["d0"]["m"] = {{1'000'000, 0.2}, {2'000'000, 0.8}, {4'000'000, 0.9}};  // ~1.4M
  curves["d1"]["m"] = {{1'000'000, 0.6}, {2'000'000, 0.8}, {4'000'000, 0.9}};  // <= 1M
  curves["d2"]["m"] = {{1'000'000, 0.2}, {2'000'000, 0.4}, {4'000'000, 0.9}};  // ~2.4M
  CompareSpec spec = Spec();
  spec.by = {"arch"};
  std::string error;
  const CompareTable table = Compare(study, curves, spec, &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(table.eval_points, (std::vector<int64_t>{1'000'000, 2'000'000, 4'000'000}));
  const CompareRow& full = table.rows[0];
  const CompareRow& gdn = table.rows[1];
  EXPECT_EQ(full.emergence.crossed, 1);
  EXPECT_EQ(full.emergence.median.kind, Crossing::kRight);  // 1 of 3: "> 4M"
  EXPECT_EQ(full.emergence.median.at, 4'000'000);
  EXPECT_EQ(gdn.emergence.crossed, 3);
  EXPECT_EQ(gdn.emergence.median.kind, Crossing::kExact);
  EXPECT_NEAR(gdn.emergence.median.at, 1'414'214, 1);  // the middle of <= 1M, 1.41M, 2.38M
  EXPECT_EQ(gdn.speed_up.kind, SpeedUp::kAtLeast);     // over "> 4M"
  EXPECT_NEAR(gdn.speed_up.value, 4e6 / 1'414'214, 1e-3);
  // Seed-wise: the gdn seed slowest to cross (2.38M) against the fastest full seed (2.83M).
  EXPECT_EQ(gdn.seedwise.kind, SpeedUp::kExact);
  EXPECT_GT(gdn.seedwise.value, 1.0);
  const nlohmann::json json = nlohmann::json::parse(CompareJson(table, spec));
  const nlohmann::json& by = json["groups"][1]["emergence"]["by_eval_point"];
  ASSERT_EQ(by.size(), 3u);
  EXPECT_EQ(by[0]["crossed"], 1);  // d1, left-censored at 1M
  EXPECT_EQ(by[1]["crossed"], 2);
  EXPECT_EQ(by[2]["crossed"], 3);
  EXPECT_EQ(by[2]["observed"], 3);
  EXPECT_EQ(json["groups"][0]["crossed"], 1);
  EXPECT_EQ(json["groups"][0]["median"]["censored_above"], 4'000'000);
}

}  // namespace
}  // namespace onset::analysis
