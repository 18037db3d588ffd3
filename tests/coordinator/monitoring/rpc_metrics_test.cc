#include "coordinator/monitoring/rpc_metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "onset/v1/onset.pb.h"

namespace onset::coordinator {
namespace {

// The API's services, from the generated descriptors.
std::vector<const google::protobuf::ServiceDescriptor*> Services() {
  const google::protobuf::FileDescriptor* file = onset::v1::Study::descriptor()->file();
  return {file->FindServiceByName("StudyService"), file->FindServiceByName("WorkerService")};
}

TEST(RpcMetricsTest, CountsByMethodAndCodeWithTheServiceSplitOff) {
  RpcMetrics metrics(Services());
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

TEST(RpcMetricsTest, EveryMethodOfTheServicesGivenIsLabelled) {
  RpcMetrics metrics(Services());
  size_t methods = 0;
  for (const google::protobuf::ServiceDescriptor* service : Services()) {
    methods += static_cast<size_t>(service->method_count());
    for (int i = 0; i < service->method_count(); ++i) {
      metrics.Record("/" + service->full_name() + "/" + service->method(i)->name(), 0, 0);
    }
  }
  EXPECT_EQ(metrics.served(), methods);
  const std::vector<RpcMetrics::Method> read = metrics.Read();
  ASSERT_EQ(read.size(), methods);
  for (const RpcMetrics::Method& m : read) {
    EXPECT_NE(m.service, RpcMetrics::kOtherService) << m.method;
    EXPECT_EQ(m.calls[0], 1u) << m.method;
  }
}

// Names from the wire that no service serves take no label of their own, however many: one
// fixed label counts them all, and the real methods called afterwards keep theirs.
TEST(RpcMetricsTest, NamesThatAreNotServedCountUnderOneFixedLabel) {
  RpcMetrics metrics(Services());
  for (int i = 0; i < 1000; ++i) metrics.Record("/x.Y/M" + std::to_string(i), 12, 0);
  for (const char* odd : {"no-slash", "", "/onset.v1.StudyService/", "/onset.v1.StudyService",
                          "/onset.v1.StudyService/getstudy", "onset.v1.StudyService/GetStudy"}) {
    metrics.Record(odd, 12, 0);
  }
  metrics.Record("/onset.v1.StudyService/ListStudies", 0, 0);
  metrics.Record("/onset.v1.WorkerService/Heartbeat", 0, 0);
  const std::vector<RpcMetrics::Method> methods = metrics.Read();
  ASSERT_EQ(methods.size(), 3u);
  EXPECT_EQ(methods[0].service, "onset.v1.StudyService");
  EXPECT_EQ(methods[0].method, "ListStudies");
  EXPECT_EQ(methods[0].calls[0], 1u);
  EXPECT_EQ(methods[1].service, "onset.v1.WorkerService");
  EXPECT_EQ(methods[1].method, "Heartbeat");
  EXPECT_EQ(methods[2].service, "other");
  EXPECT_EQ(methods[2].method, "unknown");
  EXPECT_EQ(methods[2].calls[12], 1006u);
  EXPECT_EQ(methods[2].calls[0], 0u);
}

TEST(RpcMetricsTest, WithoutServicesEveryCallIsUnknown) {
  RpcMetrics metrics({});
  metrics.Record("/onset.v1.StudyService/GetStudy", 0, 0);
  const std::vector<RpcMetrics::Method> methods = metrics.Read();
  ASSERT_EQ(methods.size(), 1u);
  EXPECT_EQ(methods[0].service, "other");
  EXPECT_EQ(methods[0].method, "unknown");
  EXPECT_EQ(metrics.served(), 0u);
}

}  // namespace
}  // namespace onset::coordinator
