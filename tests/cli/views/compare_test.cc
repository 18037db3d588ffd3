#include "cli/views/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace onset::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::GetStudyResponse Study() {
  v1::GetStudyResponse s;
  s.mutable_study()->set_name("demo");
  const char* archs[] = {"full", "full", "swa", "swa", "lightning"};
  for (int i = 0; i < 5; ++i) {
    v1::Cell* c = s.add_cells();
    c->set_id("c" + std::to_string(i));
    c->set_state(v1::CELL_STATE_SUCCEEDED);
    c->set_tokens_budget(8'000'000);
    (*c->mutable_axes())["arch"] = archs[i];
    (*c->mutable_axes())["seed"] = std::to_string(i % 2);
  }
  v1::Cell* pending = s.add_cells();  // never reported the metric
  pending->set_id("c5");
  pending->set_state(v1::CELL_STATE_QUEUED);
  (*pending->mutable_axes())["arch"] = "swa";
  (*pending->mutable_axes())["seed"] = "2";
  return s;
}

Curves Curves5() {
  Curves curves;
  auto ramp = [](double at_1m, double at_4m) {
    return std::vector<std::pair<int64_t, double>>{{1'000'000, at_1m}, {4'000'000, at_4m}};
  };
  curves["c0"]["niah/acc"] = ramp(0.2, 0.8);  // full: crosses 0.5 at 2M
  curves["c1"]["niah/acc"] = ramp(0.2, 0.8);
  curves["c2"]["niah/acc"] = ramp(0.5, 0.9);  // swa: by its first eval point, 1M
  curves["c3"]["niah/acc"] = ramp(0.5, 0.9);
  curves["c4"]["niah/acc"] = ramp(0.0, 0.1);  // lightning: never, censored at 8M
  return curves;
}

TEST(CompareTest, GroupsSeedsAndComputesSpeedUpsAgainstTheBaseline) {
  CompareSpec spec;
  spec.metric = "niah/acc";
  spec.threshold = 0.5;
  spec.baseline = {"arch", "full"};
  std::string error;
  CompareTable table = Compare(Study(), Curves5(), spec, &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(table.by, std::vector<std::string>{"arch"});
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.cells_without_points, 1);
  EXPECT_EQ(table.rows[0].axes.at("arch"), "full");
  EXPECT_EQ(table.rows[0].summary.n, 2);
  EXPECT_NEAR(table.rows[0].summary.median.at, 2e6, 1);
  EXPECT_EQ(table.rows[0].speed_up.kind, analysis::SpeedUp::kExact);
  // swa was past the threshold at its first eval point: it needed at most 1M, so at least 2x.
  EXPECT_EQ(table.rows[1].speed_up.kind, analysis::SpeedUp::kAtLeast);
  EXPECT_NEAR(table.rows[1].speed_up.value, 2.0, 1e-9);
  EXPECT_EQ(table.rows[2].speed_up.kind, analysis::SpeedUp::kAtMost);

  const std::string text = RenderCompare(table, spec);
  EXPECT_THAT(text, HasSubstr("> 8M"));
  EXPECT_THAT(text, HasSubstr("1.00x"));
  EXPECT_THAT(text, HasSubstr(">= 2.00x"));
  EXPECT_THAT(text, HasSubstr("<= 0.25x"));
  EXPECT_THAT(text, HasSubstr("1 cells have no niah/acc point yet"));
  // The first-point crossing is a bound, never a bare number.
  // So are the ends of its interval.
  EXPECT_THAT(text, HasSubstr("swa        2 (2 <=)      2/2  <= 1M [<= 1M, <= 1M]  <= 1M - <= 1M"));
  EXPECT_THAT(text, HasSubstr("lightning   1 (1 >)      0/1     > 8M [> 8M, > 8M]    > 8M - > 8M"));
  // The speed-up's bootstrap interval beside it, and the log-rank test's p-value.
  EXPECT_THAT(text, HasSubstr(">= 2.00x [>= 2.00x, >= 2.00x]   >= 2.00x   p=0.083"));
  EXPECT_THAT(text, HasSubstr("95% percentile-bootstrap interval over the seeds (2000 resamples, "
                              "seed 1)"));
  // How many cells had crossed by each eval point.
  EXPECT_THAT(text, HasSubstr("cells past 0.5 by tokens seen (crossed/observed):\n"
                              "ARCH        1M   4M\n"
                              "full       0/2  2/2\n"));
  EXPECT_THAT(text, Not(HasSubstr("PARAMS")));     // no cell is sized
  EXPECT_THAT(text, Not(HasSubstr("COPY-RATE")));  // no cell reported the control
  EXPECT_THAT(text, Not(HasSubstr("KEY-SWAP")));

  const nlohmann::json json = nlohmann::json::parse(CompareJson(table, spec));
  EXPECT_EQ(json["groups"][2]["median"]["tokens"], nullptr);  // censored: never a number
  EXPECT_EQ(json["groups"][2]["median"]["censored_above"], 8e6);
  EXPECT_EQ(json["groups"][1]["median"]["tokens"], nullptr);
  EXPECT_EQ(json["groups"][1]["median"]["censored_below"], 1e6);
  EXPECT_EQ(json["groups"][0]["speed_up"]["kind"], "exact");
  EXPECT_EQ(json["groups"][1]["speed_up"]["kind"], "at_least");
}

TEST(CompareTest, FormatsEveryKindOfCrossing) {
  using analysis::Crossing;
  EXPECT_EQ(FormatCrossing({Crossing::kExact, 2'350'000}), "2.4M");
  EXPECT_EQ(FormatCrossing({Crossing::kLeft, 250'000}), "<= 250K");
  EXPECT_EQ(FormatCrossing({Crossing::kRight, 6'000'000}), "> 6M");
  EXPECT_EQ(FormatCrossing({Crossing::kUnknown, 0}), "?");
  EXPECT_EQ(FormatCrossing({Crossing::kLeft, 2.346e15}, XAxis::kFlops), "<= 2.35e15");
  EXPECT_EQ(FormatCrossing({Crossing::kExact, 1e18}, XAxis::kFlops), "1e18");
}

TEST(CompareTest, SizesCopyRatesAndFlops) {
  v1::GetStudyResponse study = Study();
  for (int i = 0; i < 5; ++i) {
    v1::Cell* c = study.mutable_cells(i);
    c->set_non_embedding_params(i < 2 ? 1'200'000 : 800'000);
    c->set_train_flops_per_token(i < 2 ? 7.5e6 : 5e6);
  }
  Curves curves = Curves5();
  curves["c0"]["niah/control/distractor_copy_rate"] = {{4'000'000, 0.0}};
  curves["c1"]["niah/control/distractor_copy_rate"] = {{4'000'000, 0.5}};
  CompareSpec spec;
  spec.metric = "niah/acc";
  spec.threshold = 0.5;
  spec.baseline = {"arch", "full"};
  std::string error;
  CompareTable table = Compare(study, curves, spec, &error);
  std::string text = RenderCompare(table, spec);
  EXPECT_THAT(text, HasSubstr("FINAL  COPY-RATE  MEAN/LOG-T  PARAMS  FLOPS/TOK"));
  EXPECT_THAT(text, HasSubstr("COPY-RATE: final niah/control/distractor_copy_rate"));
  EXPECT_THAT(text, HasSubstr("0.8 +-0       0.25     0.5 +-0    1.2M       7.5M"));
  EXPECT_THAT(text, HasSubstr("0.9 +-0          -     0.7 +-0    800K         5M  >= 2.00x"));

  // Counted in FLOPs: full crosses at 2M x 7.5M = 1.5e13, swa by 1M x 5M = 5e12.
  spec.x = XAxis::kFlops;
  table = Compare(study, curves, spec, &error);
  text = RenderCompare(table, spec);
  EXPECT_THAT(text, HasSubstr("training FLOPs to threshold"));
  EXPECT_THAT(text, HasSubstr("FLOPS(0.5)"));
  EXPECT_THAT(text, HasSubstr("1.5e13"));
  EXPECT_THAT(text, HasSubstr("<= 5e12"));
  EXPECT_THAT(text, HasSubstr(">= 3.00x"));
  EXPECT_THAT(text, HasSubstr("> 4e13"));  // lightning: never within 8M tokens x 5M
}

TEST(CompareTest, AnUnknownAxisIsRefused) {
  CompareSpec spec;
  spec.metric = "niah/acc";
  spec.by = {"window"};
  std::string error;
  Compare(Study(), Curves5(), spec, &error);
  EXPECT_THAT(error, HasSubstr("--by: window is not an axis of study demo"));
  spec.by = {};
  spec.baseline = {"optimizer", "adam"};
  error.clear();
  Compare(Study(), Curves5(), spec, &error);
  EXPECT_THAT(error, HasSubstr("--baseline: optimizer"));
}

}  // namespace
}  // namespace onset::cli

namespace onset::cli {
namespace {

// Three seeds a side whose crossings overlap (full at 1.5M, 2M, 3M; swa at 1.2M, 2.5M, 3.5M):
// the medians differ, but the speed-up's interval includes 1x and the text says so; --json
// carries the intervals, the log-rank test and the spreads.
TEST(CompareTest, IntervalsAndTheWordsWhenTheyIncludeOne) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  Curves curves;
  const double full[] = {1.5e6, 2e6, 3e6}, swa[] = {1.2e6, 2.5e6, 3.5e6};
  for (int i = 0; i < 6; ++i) {
    v1::Cell* c = study.add_cells();
    c->set_id("c" + std::to_string(i));
    c->set_state(v1::CELL_STATE_SUCCEEDED);
    c->set_tokens_budget(8'000'000);
    (*c->mutable_axes())["arch"] = i < 3 ? "full" : "swa";
    (*c->mutable_axes())["seed"] = std::to_string(i % 3);
    const double cross = i < 3 ? full[i] : swa[i - 3];
    // 0 at 1M, 1 at 4M in log tokens: crosses 0.5 where log(t) is halfway, so pick the value at
    // 1M and 4M that put the crossing at `cross`.
    const double f = std::log(cross / 1e6) / std::log(4.0);
    curves[c->id()]["niah/acc"] = {{1'000'000, 0.5 - f}, {4'000'000, 1.5 - f}};
  }
  CompareSpec spec;
  spec.metric = "niah/acc";
  spec.threshold = 0.5;
  spec.baseline = {"arch", "full"};
  std::string error;
  const CompareTable table = Compare(study, curves, spec, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(table.rows.size(), 2u);
  const CompareRow& row = table.rows[1];
  EXPECT_NEAR(row.emergence.median.at, 2.5e6, 1);
  EXPECT_NEAR(row.median_interval.lower.at, 1.2e6, 1);
  EXPECT_NEAR(row.median_interval.upper.at, 3.5e6, 1);
  EXPECT_LT(row.speed_up_interval.lower.value, 1);
  EXPECT_GT(row.speed_up_interval.upper.value, 1);
  EXPECT_TRUE(row.logrank.defined);
  EXPECT_GT(row.logrank.p_value, 0.5);

  const std::string text = RenderCompare(table, spec);
  EXPECT_THAT(text, HasSubstr("2.5M [1.2M, 3.5M]"));
  EXPECT_THAT(text, HasSubstr("arch=swa: the speed-up's 95% interval includes 1x: these seeds "
                              "cannot tell it from the baseline"));
  EXPECT_THAT(text, Not(HasSubstr("arch=full: the speed-up")));

  const nlohmann::json json = nlohmann::json::parse(CompareJson(table, spec));
  const nlohmann::json& g = json["groups"][1];
  EXPECT_EQ(g["median_interval"]["level"], 0.95);
  EXPECT_NEAR(g["median_interval"]["lower"]["tokens"].get<double>(), 1.2e6, 1);
  EXPECT_NEAR(g["median_interval"]["upper"]["tokens"].get<double>(), 3.5e6, 1);
  EXPECT_EQ(g["speed_up"]["interval"]["resamples"], 2000);
  EXPECT_EQ(g["speed_up"]["interval"]["seed"], 1);
  EXPECT_EQ(g["speed_up"]["interval"]["lower"]["kind"], "exact");
  EXPECT_GT(g["logrank"]["p_value"].get<double>(), 0.5);
  EXPECT_EQ(g["final"]["n"], 3);
  EXPECT_TRUE(g["mean_over_log_tokens"].contains("sd"));
  EXPECT_FALSE(json["groups"][0].contains("logrank"));  // the baseline itself

  // Another level and seed: the same median, a narrower interval at 50%.
  spec.level = 0.5;
  spec.bootstrap_seed = 9;
  const CompareTable narrow = Compare(study, curves, spec, &error);
  EXPECT_GE(narrow.rows[1].median_interval.lower.at, row.median_interval.lower.at);
  EXPECT_LE(narrow.rows[1].median_interval.upper.at, row.median_interval.upper.at);
  EXPECT_LE(
      narrow.rows[1].speed_up_interval.upper.value - narrow.rows[1].speed_up_interval.lower.value,
      row.speed_up_interval.upper.value - row.speed_up_interval.lower.value);
}

}  // namespace
}  // namespace onset::cli
