#include "analysis/compare_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace onset::analysis {
namespace {

using ::testing::ElementsAre;

TEST(CompareParamsTest, ReadsEveryParameter) {
  CompareParams params;
  params.metric = "niah/acc";
  params.threshold = "0.5";
  params.x = "flops";
  params.by = "arch, pos,,";
  params.baseline = "arch=full";
  absl::StatusOr<CompareSpec> spec = ParseCompareParams(params, /*threshold_required=*/true);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->metric, "niah/acc");
  EXPECT_EQ(spec->threshold, 0.5);
  EXPECT_EQ(spec->direction, Direction::kUp);  // auto, for an accuracy
  EXPECT_EQ(spec->x, XAxis::kFlops);
  EXPECT_THAT(spec->by, ElementsAre("arch", "pos"));
  EXPECT_EQ(spec->baseline, std::make_pair(std::string("arch"), std::string("full")));

  params.metric = "eval/short_loss";
  params.baseline = "";
  EXPECT_EQ(ParseCompareParams(params, true)->direction, Direction::kDown);  // a loss
  params.direction = "up";
  EXPECT_EQ(ParseCompareParams(params, true)->direction, Direction::kUp);
}

// Each refusal names the parameter, what it must be and what it got; a baseline without a value
// (which the dashboard used to take) is one of them.
TEST(CompareParamsTest, RefusalsNameTheParameterAndWhatItGot) {
  // niah/acc with these fields set to these values, the others at their defaults.
  auto refused =
      [](std::initializer_list<std::pair<std::string CompareParams::*, std::string>> fields) {
        CompareParams params;
        params.metric = "niah/acc";
        for (const auto& [field, value] : fields) params.*field = value;
        absl::StatusOr<CompareSpec> spec = ParseCompareParams(params, /*threshold_required=*/true);
        EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
        return std::string(spec.status().message());
      };
  EXPECT_EQ(refused({{&CompareParams::threshold, ""}}), "threshold: a number is required");
  EXPECT_EQ(refused({{&CompareParams::threshold, "half"}}),
            "threshold: must be a finite number, got 'half'");
  EXPECT_EQ(refused({{&CompareParams::threshold, "1e999"}}),
            "threshold: must be a finite number, got '1e999'");
  EXPECT_EQ(refused({{&CompareParams::threshold, "nan"}}),
            "threshold: must be a finite number, got 'nan'");
  EXPECT_EQ(refused({{&CompareParams::threshold, "0.5"}, {&CompareParams::direction, "sideways"}}),
            "direction: must be auto, up or down, got 'sideways'");
  EXPECT_EQ(refused({{&CompareParams::threshold, "0.5"}, {&CompareParams::x, "steps"}}),
            "x: must be tokens or flops, got 'steps'");
  for (const char* bad : {"arch", "=full", "arch="}) {
    EXPECT_EQ(refused({{&CompareParams::threshold, "0.5"}, {&CompareParams::baseline, bad}}),
              std::string("baseline: must be AXIS=VALUE, e.g. arch=full, got '") + bad + "'");
  }
  CompareParams no_metric;
  no_metric.threshold = "0.5";
  EXPECT_EQ(ParseCompareParams(no_metric, true).status().message(),
            "metric: a metric name is required");
  // A plot needs no threshold.
  CompareParams plot;
  plot.metric = "niah/acc";
  EXPECT_TRUE(ParseCompareParams(plot, /*threshold_required=*/false).ok());
}

TEST(CompareParamsTest, LevelsBootstrapAndBestOver) {
  CompareParams p;
  p.metric = "niah/acc";
  p.threshold = "0.5";
  absl::StatusOr<CompareSpec> spec = ParseCompareParams(p, true);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->level, 0.95);
  EXPECT_EQ(spec->bootstrap_resamples, 2000);
  EXPECT_EQ(spec->bootstrap_seed, 1u);
  EXPECT_TRUE(spec->best_over.axis.empty());

  p.level = "0.9";
  p.bootstrap = "500";
  p.bootstrap_seed = "42";
  p.best_over = "lr";
  spec = ParseCompareParams(p, true);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->level, 0.9);
  EXPECT_EQ(spec->bootstrap_resamples, 500);
  EXPECT_EQ(spec->bootstrap_seed, 42u);
  EXPECT_EQ(spec->best_over.axis, "lr");
  EXPECT_EQ(spec->best_over.metric, "eval/heldout_loss");  // by default not the answer
  EXPECT_EQ(spec->best_over.rule, BestOverSpec::Rule::kMin);

  p.select = "niah/acc";  // an accuracy: best high
  p.select_on_seeds = "0, 1";
  spec = ParseCompareParams(p, true);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->best_over.rule, BestOverSpec::Rule::kMax);
  EXPECT_EQ(spec->best_over.selection_seeds, (std::set<std::string>{"0", "1"}));
  p.select = "eval/short_loss:crossing";
  spec = ParseCompareParams(p, true);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->best_over.metric, "eval/short_loss");
  EXPECT_EQ(spec->best_over.rule, BestOverSpec::Rule::kCrossing);

  const auto refused = [&](CompareParams q) {
    return std::string(ParseCompareParams(q, true).status().message());
  };
  CompareParams bad = p;
  bad.select = "eval/short_loss:median";
  EXPECT_EQ(refused(bad),
            "select: must be METRIC[:min|max|crossing], got 'eval/short_loss:median'");
  bad = p;
  bad.level = "95";
  EXPECT_EQ(refused(bad), "level: must be a number from 0.5 to 0.999, e.g. 0.95, got '95'");
  bad = p;
  bad.bootstrap = "10";
  EXPECT_EQ(refused(bad), "bootstrap: must be an integer from 100 to 100000, got '10'");
  bad = p;
  bad.bootstrap_seed = "-1";
  EXPECT_EQ(refused(bad), "bootstrap-seed: must be an unsigned integer, got '-1'");
  bad = p;
  bad.best_over = "";
  EXPECT_THAT(refused(bad), ::testing::StartsWith("select: --select and --select-on-seeds"));
}

}  // namespace
}  // namespace onset::analysis
