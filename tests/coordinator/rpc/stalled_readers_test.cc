// Every server stream of the StudyService waits for its reader a bounded time: a client that stops
// reading a SubmitStudy answer, a watch or a metrics stream loses its call once a message has
// waited for it longer than the stalled-reader limit (write_watchdog.h), and with the call what it
// held: a submission's place among kConcurrentSubmissions and its cells, a watch's thread.
//
// The stalled clients announce small flow-control windows (no BDP probing), so that the first
// large message fills them; each is read only after the limit has passed, and must then find its
// call ended by the coordinator (CANCELLED, short of the whole answer).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/grpc_auth.h"
#include "coordinator/rpc/study_service.h"
#include "coordinator/server/coordinator_server.h"
#include "onset/v1/onset.grpc.pb.h"
#include "tests/coordinator/rpc/worker_secrets.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

namespace v1 = ::onset::v1;
using Clock = std::chrono::steady_clock;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef-test-token";
constexpr std::chrono::milliseconds kLimit{1000};
// Time enough for a stalled call to be admitted, fill its windows and wait past the limit.
constexpr std::chrono::milliseconds kPastTheLimit = kLimit + std::chrono::seconds(4);

// kSmallStudy with `seeds` seeds: 3 x seeds cells (full, swa at two windows).
std::string BigStudy(int seeds) {
  std::string yaml = testing::kSmallStudy;
  yaml.replace(yaml.find("seeds: 2"), 8, "seeds: " + std::to_string(seeds));
  return yaml;
}

class StalledReadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    config.db_path = dir_.File("onset.db");
    config.listen = "127.0.0.1:0";
    config.token = kToken;
    config.stalled_reader_limit = kLimit;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    // Every call carries the token itself (Ctx).
    auto channel = common::NewClientChannel(server_->address(), common::ClientSecurity{});
    studies_ = v1::StudyService::NewStub(channel);
    workers_ = v1::WorkerService::NewStub(channel);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // A stub on a connection of its own that takes little before it must be read: a client that
  // stops reading blocks the coordinator's writes after a few KB.
  std::unique_ptr<v1::StudyService::Stub> StalledStub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 * 1024);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, -1);
    return v1::StudyService::NewStub(
        grpc::CreateCustomChannel(server_->address(), grpc::InsecureChannelCredentials(), args));
  }

  // A context with the token and a deadline well past the test's waits.
  static std::unique_ptr<grpc::ClientContext> Ctx(
      std::chrono::seconds deadline = std::chrono::seconds(60)) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata("authorization", std::string("Bearer ") + kToken);
    ctx->set_deadline(std::chrono::system_clock::now() + deadline);
    return ctx;
  }

  // Submits `yaml` and reads the whole answer within 20 s; its status.
  grpc::Status Submit(const std::string& yaml, bool dry_run, int* cells = nullptr) {
    v1::SubmitStudyRequest request;
    request.set_yaml(yaml);
    request.set_dry_run(dry_run);
    auto ctx = Ctx(std::chrono::seconds(20));
    auto reader = studies_->SubmitStudy(ctx.get(), request);
    v1::SubmitStudyResponse piece;
    int read = 0;
    while (reader->Read(&piece)) read += piece.cells_size();
    if (cells != nullptr) *cells = read;
    return reader->Finish();
  }

  testutil::TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<v1::StudyService::Stub> studies_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
};

// Two dry runs whose answers nobody reads take both places; past the limit they are cancelled,
// and a third submission is admitted at once instead of waiting kSubmissionWait to be refused.
TEST_F(StalledReadersTest, SubmissionsWhoseAnswersAreNotReadLoseTheirPlacesWithinTheLimit) {
  const std::string big = BigStudy(2000);  // 6,000 cells: answers of about a MB
  std::vector<std::unique_ptr<v1::StudyService::Stub>> stubs;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::SubmitStudyResponse>>> readers;
  v1::SubmitStudyRequest request;
  request.set_yaml(big);
  request.set_dry_run(true);
  for (int i = 0; i < kConcurrentSubmissions; ++i) {
    stubs.push_back(StalledStub());
    contexts.push_back(Ctx());
    readers.push_back(stubs.back()->SubmitStudy(contexts.back().get(), request));  // not read
  }
  std::this_thread::sleep_for(kPastTheLimit);
  const auto asked = Clock::now();
  int cells = 0;
  const grpc::Status third = Submit(testing::kSmallStudy, /*dry_run=*/false, &cells);
  const auto waited = Clock::now() - asked;
  EXPECT_TRUE(third.ok()) << third.error_code() << ": " << third.error_message();
  EXPECT_EQ(cells, 6);
  EXPECT_LT(waited, std::chrono::seconds(3));
  // The stalled answers end short, cancelled by the coordinator.
  for (auto& reader : readers) {
    v1::SubmitStudyResponse piece;
    int read = 0;
    while (reader->Read(&piece)) read += piece.cells_size();
    EXPECT_LT(read, 6000);
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
}

// A watch whose reader stops is ended by the coordinator: read later, its stream stops short of
// the snapshot with CANCELLED, instead of running until the client's deadline.
TEST_F(StalledReadersTest, AWatchWhoseReaderStopsIsEnded) {
  int cells = 0;
  ASSERT_TRUE(Submit(BigStudy(2000), /*dry_run=*/false, &cells).ok());
  ASSERT_EQ(cells, 6000);
  auto stub = StalledStub();
  auto ctx = Ctx(std::chrono::seconds(30));
  v1::WatchStudyRequest request;
  request.set_study("small");
  auto reader = stub->WatchStudy(ctx.get(), request);  // not read
  std::this_thread::sleep_for(kPastTheLimit);
  const auto reading = Clock::now();
  v1::WatchStudyResponse message;
  int read = 0;
  while (reader->Read(&message)) read += message.snapshot().cells_size();
  const grpc::Status ended = reader->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::CANCELLED) << ended.error_message();
  EXPECT_LT(read, 6000);
  EXPECT_LT(Clock::now() - reading, std::chrono::seconds(5));
}

// A metrics stream whose reader stops is ended the same way.
TEST_F(StalledReadersTest, AMetricsStreamWhoseReaderStopsIsEnded) {
  ASSERT_TRUE(Submit(testing::kSmallStudy, /*dry_run=*/false).ok());
  v1::RegisterWorkerRequest registration;
  registration.set_host("h");
  registration.set_slots(1);
  v1::RegisterWorkerResponse registered;
  {
    auto ctx = Ctx();
    ASSERT_TRUE(workers_->RegisterWorker(ctx.get(), registration, &registered).ok());
  }
  v1::LeaseJobRequest lease_request;
  lease_request.set_worker_id(registered.worker_id());
  lease_request.set_worker_secret(registered.worker_secret());
  lease_request.add_free_devices("cpu:0");
  v1::LeaseJobResponse lease;
  {
    auto ctx = Ctx();
    ASSERT_TRUE(workers_->LeaseJob(ctx.get(), lease_request, &lease).ok());
  }
  ASSERT_TRUE(lease.has_job());
  // Four chunks of 10,000: 40 metrics of 1,000 points within the cell's budget (64K tokens).
  constexpr int kPoints = 40'000;
  for (int from = 0; from < kPoints; from += 10'000) {
    v1::ReportMetricsRequest report;
    report.set_worker_id(registered.worker_id());
    report.set_worker_secret(registered.worker_secret());
    report.set_lease_id(lease.job().lease_id());
    for (int i = from; i < from + 10'000; ++i) {
      v1::MetricPoint* p = report.add_points();
      p->set_name("eval/m" + std::to_string(i / 1000));
      p->set_tokens(64 * (i % 1000 + 1));
      p->set_value(1.0 / (i + 1));
    }
    v1::ReportMetricsResponse reported;
    auto ctx = Ctx();
    ASSERT_TRUE(workers_->ReportMetrics(ctx.get(), report, &reported).ok());
    ASSERT_EQ(reported.accepted(), 10'000);
  }
  auto stub = StalledStub();
  auto ctx = Ctx(std::chrono::seconds(30));
  v1::StreamMetricsRequest request;
  request.set_study("small");
  auto reader = stub->StreamMetrics(ctx.get(), request);  // not read
  std::this_thread::sleep_for(kPastTheLimit);
  v1::MetricsChunk chunk;
  int points = 0;
  while (reader->Read(&chunk)) {
    for (const v1::CellCurve& curve : chunk.curves()) points += curve.tokens_size();
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_LT(points, kPoints);
}

}  // namespace
}  // namespace onset::coordinator
