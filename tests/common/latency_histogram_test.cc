#include "common/latency_histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace onset::common {
namespace {

TEST(LatencyHistogramTest, NegativeAndNaNCountAsZero) {
  LatencyHistogram histogram({0.001});
  histogram.Observe(-1);
  histogram.Observe(std::nan(""));
  const LatencyHistogram::Snapshot s = histogram.Read();
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.cumulative[0], 2u);
  EXPECT_EQ(s.sum, 0);
}

TEST(LatencyHistogramTest, DefaultBoundsAscend) {
  const std::vector<double>& bounds = DefaultLatencyBounds();
  for (size_t i = 1; i < bounds.size(); ++i) EXPECT_LT(bounds[i - 1], bounds[i]);
  LatencyHistogram histogram;
  histogram.Observe(20);
  EXPECT_EQ(histogram.Read().cumulative.back(), 0u);
  EXPECT_EQ(histogram.Read().count, 1u);
}

TEST(LatencyHistogramTest, ConcurrentObservationsAllCount) {
  LatencyHistogram histogram({0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) histogram.Observe(0.25);
    });
  }
  for (std::thread& t : threads) t.join();
  const LatencyHistogram::Snapshot s = histogram.Read();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_EQ(s.cumulative[0], 40000u);
  EXPECT_DOUBLE_EQ(s.sum, 10000);
}

}  // namespace
}  // namespace onset::common
