#include "common/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace onset::common {
namespace {

TEST(PrometheusTextTest, FamiliesSamplesAndEscapes) {
  PrometheusText page;
  page.Family("onset_x_total", PrometheusText::Type::kCounter, "Calls, with \\ and\na newline.");
  page.Sample("onset_x_total", {{"study", "a\"b\\c\nd"}, {"state", "queued"}}, 3);
  page.Family("onset_y", PrometheusText::Type::kGauge, "A gauge.");
  page.Sample("onset_y", {}, 0.25);
  EXPECT_EQ(page.text(),
            "# HELP onset_x_total Calls, with \\\\ and\\na newline.\n"
            "# TYPE onset_x_total counter\n"
            "onset_x_total{study=\"a\\\"b\\\\c\\nd\",state=\"queued\"} 3\n"
            "# HELP onset_y A gauge.\n"
            "# TYPE onset_y gauge\n"
            "onset_y 0.25\n");
}

TEST(PrometheusTextTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  LatencyHistogram histogram({0.001, 0.01});
  histogram.Observe(0.0005);
  histogram.Observe(0.001);  // on a bound: that bucket (le is "less or equal")
  histogram.Observe(0.005);
  histogram.Observe(3);
  PrometheusText page;
  page.Histogram("onset_h_seconds", {{"method", "M"}}, histogram.Read());
  EXPECT_EQ(page.text(),
            "onset_h_seconds_bucket{method=\"M\",le=\"0.001\"} 2\n"
            "onset_h_seconds_bucket{method=\"M\",le=\"0.01\"} 3\n"
            "onset_h_seconds_bucket{method=\"M\",le=\"+Inf\"} 4\n"
            "onset_h_seconds_sum{method=\"M\"} 3.0065\n"
            "onset_h_seconds_count{method=\"M\"} 4\n");
}

TEST(PrometheusTextTest, SampleValues) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(123456789012.0), "123456789012");
  EXPECT_EQ(FormatSampleValue(-4), "-4");
  EXPECT_EQ(FormatSampleValue(0.0005), "0.0005");
  EXPECT_EQ(FormatSampleValue(1.5e-9), "1.5e-09");
  EXPECT_EQ(FormatSampleValue(1e300), "1e+300");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
}

}  // namespace
}  // namespace onset::common
