#include "worker/metrics_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace onset::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

TEST(MetricsParserTest, TrainLineBecomesPointsAtItsTokens) {
  MetricsParser parser;
  std::vector<MetricPoint> points;
  parser.Consume(
      R"({"event":"train","tokens":81920,"step":10,"metrics":{"train/loss":3.2,"train/lr":0.001,"train/tokens_per_second":25000}})",
      &points);
  EXPECT_THAT(points, UnorderedElementsAre(MetricPoint{"train/loss", 81920, 3.2},
                                           MetricPoint{"train/lr", 81920, 0.001},
                                           MetricPoint{"train/tokens_per_second", 81920, 25000}));
  EXPECT_EQ(parser.tokens_done(), 81920);
  EXPECT_EQ(parser.tokens_per_second(), 25000);
  EXPECT_EQ(parser.latest_loss(), 3.2);
  EXPECT_EQ(parser.malformed_lines(), 0);
}

// The null rule (base/metrics_line.h): null is a value that was not finite, a NaN point.
TEST(MetricsParserTest, NullValuesArriveAsNanPoints) {
  MetricsParser parser;
  std::vector<MetricPoint> points;
  parser.Consume(
      R"({"event":"eval","tokens":250000,"metrics":{"eval/heldout_loss":2.9,"niah/acc@256":null}})",
      &points);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0], (MetricPoint{"eval/heldout_loss", 250000, 2.9}));
  EXPECT_EQ(points[1].name, "niah/acc@256");
  EXPECT_EQ(points[1].tokens, 250000);
  EXPECT_TRUE(std::isnan(points[1].value));
  EXPECT_EQ(parser.malformed_lines(), 0);
}

// Each point carries its line's wall time; a line without one (an older trainer) or with one no
// clock could show gives points of unknown time (0), never a dropped point.
TEST(MetricsParserTest, PointsCarryTheirLinesWallTime) {
  MetricsParser parser;
  std::vector<MetricPoint> points;
  parser.Consume(R"({"event":"eval","tokens":8,"at_unix_ms":1796558400123,"metrics":{"a/x":1}})",
                 &points);
  parser.Consume(R"({"event":"eval","tokens":9,"metrics":{"a/x":2}})", &points);
  parser.Consume(R"({"event":"eval","tokens":10,"at_unix_ms":-5,"metrics":{"a/x":3}})", &points);
  parser.Consume(R"({"event":"eval","tokens":11,"at_unix_ms":42,"metrics":{"a/x":4}})", &points);
  EXPECT_THAT(points, testing::ElementsAre(
                          MetricPoint{"a/x", 8, 1, 1796558400123}, MetricPoint{"a/x", 9, 2, 0},
                          MetricPoint{"a/x", 10, 3, 0}, MetricPoint{"a/x", 11, 4, 0}));
  EXPECT_EQ(parser.malformed_lines(), 0);
  EXPECT_EQ(parser.dropped_points(), 0);
}

TEST(MetricsParserTest, MalformedLinesAreCountedNotFatal) {
  MetricsParser parser("cell x attempt 1");
  std::vector<MetricPoint> points;
  parser.Consume("not json", &points);
  parser.Consume("[1,2]", &points);
  parser.Consume(R"({"tokens":1,"metrics":{}})", &points);                        // no event
  parser.Consume(R"({"event":"train","tokens":"x","metrics":{}})", &points);      // bad tokens
  parser.Consume(R"({"event":"train","tokens":5,"metrics":3})", &points);         // bad metrics
  parser.Consume(R"({"event":"eval","tokens":5,"metrics":{"a":"x"}})", &points);  // bad value
  parser.Consume("   ", &points);                                                 // blank: ignored
  EXPECT_THAT(points, IsEmpty());
  EXPECT_EQ(parser.malformed_lines(), 6);
  parser.Consume(R"({"event":"train","tokens":7,"metrics":{"train/loss":1}})", &points);
  EXPECT_THAT(points, ElementsAre(MetricPoint{"train/loss", 7, 1}));
}

TEST(MetricsParserTest, TracksTokensDoneAndEvents) {
  MetricsParser parser;
  std::vector<MetricPoint> points;
  parser.Consume(R"({"event":"train","tokens":500,"metrics":{"train/tokens_per_second":10}})",
                 &points);
  parser.Consume(R"({"event":"eval","tokens":400,"metrics":{}})", &points);
  EXPECT_EQ(parser.tokens_done(), 500);
  EXPECT_FALSE(parser.diverged());
  parser.Consume(R"({"event":"diverged","tokens":600,"metrics":{"train/loss":null}})", &points);
  EXPECT_TRUE(parser.diverged());
  EXPECT_FALSE(parser.done());
  EXPECT_EQ(parser.tokens_done(), 600);
  EXPECT_EQ(parser.tokens_per_second(), 10);
  ASSERT_TRUE(parser.latest_loss().has_value());  // the diverged loss: not finite
  EXPECT_TRUE(std::isnan(*parser.latest_loss()));
}

TEST(MetricsParserTest, PointsBreakingTheLimitsAreDroppedAloneAndCounted) {
  MetricsParser parser;
  std::vector<MetricPoint> points;
  parser.Consume(R"({"event":"train","tokens":100,"metrics":{"train/loss":3.0}})", &points);
  parser.Consume(R"({"event":"train","tokens":-1,"metrics":{"train/loss":2.9,"train/lr":0.1}})",
                 &points);
  parser.Consume(R"({"event":"train","tokens":18446744073709551615,"metrics":{"train/loss":2.8}})",
                 &points);
  parser.Consume(R"({"event":"train","tokens":9223372036854775807,"metrics":{"train/loss":2.7}})",
                 &points);
  parser.Consume(R"({"event":"train","tokens":200,"metrics":{"":1,"train/loss":2.6,"a b":1}})",
                 &points);
  parser.Consume(R"({"event":"eval","tokens":200,"metrics":{")" + std::string(10 << 20, 'n') +
                     R"(":1,"eval/heldout_loss":2.5}})",
                 &points);
  EXPECT_THAT(points,
              ElementsAre(MetricPoint{"train/loss", 100, 3.0}, MetricPoint{"train/loss", 200, 2.6},
                          MetricPoint{"eval/heldout_loss", 200, 2.5}));
  EXPECT_EQ(parser.dropped_points(), 7);
  EXPECT_EQ(parser.first_drop_reason(), "tokens -1: must be 0..1000000000000000");
  EXPECT_EQ(parser.malformed_lines(), 0);
  // Bad tokens are no progress.
  EXPECT_EQ(parser.tokens_done(), 200);
}

TEST(MetricsParserTest, ThroughputIsOnlyTakenWhenFiniteAndNotNegative) {
  MetricsParser parser;
  std::vector<MetricPoint> points;
  parser.Consume(R"({"event":"train","tokens":1,"metrics":{"train/tokens_per_second":50}})",
                 &points);
  parser.Consume(R"({"event":"train","tokens":2,"metrics":{"train/tokens_per_second":-7}})",
                 &points);
  EXPECT_EQ(parser.tokens_per_second(), 50);
  EXPECT_EQ(parser.tokens_done(), 2);
}

}  // namespace
}  // namespace onset::worker
