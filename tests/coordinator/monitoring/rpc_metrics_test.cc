#include "coordinator/monitoring/rpc_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace onset::coordinator {
namespace {

TEST(RpcMetricsTest, CountsByMethodAndCodeWithTheServiceSplitOff) {
  RpcMetrics metrics;
  metrics.Record("/onset.v1.StudyService/GetStudy", 0, 0.001);
  metrics.Record("/onset.v1.StudyService/GetStudy", 5, 0.003);
  metrics.Record("/onset.v1.StudyService/GetStudy", 5, 0.004);
  metrics.Record("/onset.v1.StudyService/GetStudy", 99, 0.004);  // not a code: UNKNOWN
  const std::vector<RpcMetrics::Method> methods = metrics.Read();
  ASSERT_EQ(methods.size(), 1u);
  EXPECT_EQ(methods[0].service, "onset.v1.StudyService");
  EXPECT_EQ(methods[0].method, "GetStudy");
  EXPECT_EQ(methods[0].calls[0], 1u);
  EXPECT_EQ(methods[0].calls[5], 2u);
  EXPECT_EQ(methods[0].calls[2], 1u);
  EXPECT_EQ(methods[0].seconds.count, 4u);
  EXPECT_NEAR(methods[0].seconds.sum, 0.012, 1e-9);
  EXPECT_STREQ(GrpcCodeName(5), "NOT_FOUND");
  EXPECT_STREQ(GrpcCodeName(16), "UNAUTHENTICATED");
  EXPECT_STREQ(GrpcCodeName(17), "UNKNOWN");
}

TEST(RpcMetricsTest, NamesFromTheWireAreBoundedAndOddOnesAreOther) {
  RpcMetrics metrics;
  for (int i = 0; i < 1000; ++i) metrics.Record("/x.Y/M" + std::to_string(i), 0, 0);
  metrics.Record("no-slash", 0, 0);
  const std::vector<RpcMetrics::Method> methods = metrics.Read();
  EXPECT_EQ(methods.size(), RpcMetrics::kMaxMethods);
  uint64_t other = 0;
  for (const RpcMetrics::Method& m : methods) {
    if (m.service == "other") other += m.calls[0];
  }
  EXPECT_EQ(other, 1001u - (RpcMetrics::kMaxMethods - 1));
}

TEST(RpcMetricsTest, AnOddNameWithinTheBoundCountsUnderOther) {
  RpcMetrics metrics;
  metrics.Record("no-slash", 0, 0);
  const std::vector<RpcMetrics::Method> methods = metrics.Read();
  ASSERT_EQ(methods.size(), 1u);
  EXPECT_EQ(methods[0].service, "other");
}

}  // namespace
}  // namespace onset::coordinator
