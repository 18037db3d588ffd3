#include "analysis/compare_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace onset::analysis
