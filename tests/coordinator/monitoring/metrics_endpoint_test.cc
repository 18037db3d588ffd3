#include "coordinator/monitoring/metrics_endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using testutil::TempDir;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";

class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
    MetricsSources s;
    s.studies = store_.get();
    s.workers = store_.get();
    s.open_leases = [] { return int64_t{0}; };
    s.expired_leases = [] { return int64_t{0}; };
    s.writer = [this] { return store_->WriterStats(); };
    s.clock = &clock_;
    metrics_ = std::make_unique<CoordinatorMetrics>(s);
    endpoint_ = std::make_unique<MetricsEndpoint>(metrics_.get(), kToken, &clock_,
                                                  std::chrono::milliseconds(1000));
  }

  HttpResponse Get(const std::string& target, const std::string& authorization) {
    return endpoint_->Handle({"GET", target, authorization});
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::string worker_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

TEST_F(MetricsEndpointTest, OnlyGetMetricsWithTheToken) {
  EXPECT_EQ(Get("/metrics", "").status, 401);
  EXPECT_EQ(Get("/metrics", "Bearer wrong").status, 401);
  EXPECT_EQ(Get("/metrics", kToken).status, 401);  // without "Bearer "
  EXPECT_EQ(Get("/", std::string("Bearer ") + kToken).status, 404);
  EXPECT_EQ(endpoint_->Handle({"POST", "/metrics", std::string("Bearer ") + kToken}).status, 405);
  const HttpResponse ok = Get("/metrics?x=1", std::string("Bearer ") + kToken);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(ok.body, HasSubstr("onset_studies 1\n"));
}

// Prometheus scrapes with a read token; a worker's token is refused with what it lacks, and a
// token revoked since is refused as any unknown one.
TEST_F(MetricsEndpointTest, AnyTokenOfRoleReadOrBetterScrapes) {
  auto tokens = common::TokenRegistry::WithFileToken(kToken);
  tokens->AddSecret("prom-secret", {"prom", common::Role::kRead});
  tokens->AddSecret("ci-secret", {"ci", common::Role::kSubmit});
  tokens->AddSecret("worker-secret", {"gpu-node", common::Role::kWorker});
  MetricsEndpoint endpoint(metrics_.get(), tokens, &clock_);
  for (const char* secret : {"prom-secret", "ci-secret", kToken}) {
    EXPECT_EQ(endpoint.Handle({"GET", "/metrics", std::string("Bearer ") + secret}).status, 200)
        << secret;
  }
  const HttpResponse worker = endpoint.Handle({"GET", "/metrics", "Bearer worker-secret"});
  EXPECT_EQ(worker.status, 403);
  EXPECT_THAT(worker.body, HasSubstr("token 'gpu-node' has role worker; /metrics needs read"));
  tokens->Remove("prom");
  const HttpResponse revoked = endpoint.Handle({"GET", "/metrics", "Bearer prom-secret"});
  EXPECT_EQ(revoked.status, 401);
  EXPECT_THAT(revoked.body, HasSubstr("missing or wrong token"));
}

TEST_F(MetricsEndpointTest, APageIsReadAtMostOncePerInterval) {
  const std::string auth = std::string("Bearer ") + kToken;
  EXPECT_THAT(Get("/metrics", auth).body, HasSubstr("onset_workers_registered 1\n"));
  ASSERT_TRUE(store_->RegisterWorker({"h2", 1, "v"}).ok());
  clock_.Advance(std::chrono::milliseconds(999));
  EXPECT_THAT(Get("/metrics", auth).body, HasSubstr("onset_workers_registered 1\n"));
  clock_.Advance(std::chrono::milliseconds(1));
  EXPECT_THAT(Get("/metrics", auth).body, HasSubstr("onset_workers_registered 2\n"));
}

}  // namespace
}  // namespace onset::coordinator
