// The coordinator through its gRPC API: a real CoordinatorServer on port 0 and a client.
#include "coordinator/server/coordinator_server.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <set>

#include "common/grpc_auth.h"
#include "coordinator/rpc/method_roles.h"
#include "coordinator/rpc/study_service.h"
#include "db/sqlite.h"
#include "onset/v1/onset.grpc.pb.h"
#include "tests/common/self_signed.h"
#include "tests/coordinator/rpc/worker_secrets.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace v1 = ::onset::v1;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef-test-token";

std::shared_ptr<grpc::Channel> Channel(const std::string& address, const std::string& token,
                                       const std::string& tls_roots = "") {
  return common::NewClientChannel(address, common::ClientSecurity{token, tls_roots});
}

std::chrono::system_clock::time_point Deadline() {
  return std::chrono::system_clock::now() + std::chrono::seconds(10);
}

// A client context with Deadline()'s deadline.
std::unique_ptr<grpc::ClientContext> DeadlineContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(Deadline());
  return context;
}

// Calls `method` ("/package.Service/Method") with an empty request, whatever its type.
grpc::Status CallWithEmptyRequest(const std::shared_ptr<grpc::Channel>& channel,
                                  const std::string& method) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// "/onset.v1.StudyService/SubmitStudy", ... for every method of every service.
std::vector<std::string> EveryMethod() {
  std::vector<std::string> methods;
  for (const char* service :
       {v1::StudyService::service_full_name(), v1::WorkerService::service_full_name(),
        v1::AccessService::service_full_name()}) {
    const google::protobuf::ServiceDescriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
    EXPECT_NE(descriptor, nullptr) << service;
    if (descriptor == nullptr) continue;
    for (int i = 0; i < descriptor->method_count(); ++i) {
      methods.push_back("/" + std::string(service) + "/" + descriptor->method(i)->name());
    }
  }
  return methods;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(false); }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  void StartServer(bool requeue_running) {
    ServerConfig config;
    config.db_path = dir_.File("db/onset.db");
    config.listen = "127.0.0.1:0";
    config.lease_ttl = std::chrono::milliseconds(60'000);
    config.heartbeat_interval = std::chrono::milliseconds(1'000);
    config.requeue_running_on_start = requeue_running;
    config.token = kToken;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    ASSERT_THAT(server_->address(), StartsWith("127.0.0.1:"));
    ASSERT_NE(server_->address(), "127.0.0.1:0");
    EXPECT_FALSE(server_->tls());
    auto channel = Channel(server_->address(), kToken);
    studies_ = v1::StudyService::NewStub(channel);
    workers_ = v1::WorkerService::NewStub(channel);
  }

  // A context with a deadline, so a hung server fails the test instead of blocking it.
  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(Deadline());
    return ctx;
  }

  v1::SubmitStudyResponse Submit(const std::string& yaml, grpc::Status* status,
                                 bool dry_run = false) {
    v1::SubmitStudyRequest req;
    req.set_source_name("studies/small.yaml");
    req.set_yaml(yaml);
    req.set_dry_run(dry_run);
    // The answer streams: the first piece has the study and counts, each piece more cells.
    v1::SubmitStudyResponse resp;
    auto ctx = Ctx();
    auto reader = studies_->SubmitStudy(ctx.get(), req);
    v1::SubmitStudyResponse piece;
    bool first = true;
    while (reader->Read(&piece)) {
      if (first) {
        resp = piece;
        first = false;
      } else {
        for (const v1::Cell& cell : piece.cells()) *resp.add_cells() = cell;
        for (const std::string& id : piece.new_cell_ids()) resp.add_new_cell_ids(id);
      }
      ++submit_pieces_;
    }
    *status = reader->Finish();
    return resp;
  }

  std::string Register() {
    v1::RegisterWorkerRequest req;
    req.set_host("test-host");
    req.set_slots(1);
    req.set_version("test");
    v1::RegisterWorkerResponse resp;
    grpc::Status s = workers_->RegisterWorker(Ctx().get(), req, &resp);
    testing::Remember(resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.lease_ttl_ms(), 60'000);
    EXPECT_EQ(resp.heartbeat_interval_ms(), 1'000);
    return resp.worker_id();
  }

  testutil::TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<v1::StudyService::Stub> studies_;
  int submit_pieces_ = 0;  // messages of SubmitStudy answers so far
  std::unique_ptr<v1::WorkerService::Stub> workers_;
};

// A study stored under a name that is not one path component (names are refused at parse now,
// but a database may hold one from before) never gets a checkpoint directory outside the root.
TEST(ServerCheckpointRootTest, CheckpointDirectoriesStayUnderTheRoot) {
  testutil::TempDir dir;
  const common::Clock& clock = common::SystemClock();
  {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir.File("onset.db"), clock);
    ASSERT_TRUE(store.ok()) << store.status();
    absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", testing::kSmallStudy);
    ASSERT_TRUE(spec.ok()) << spec.status();
    std::vector<CellSpec> one = {spec->cells.front()};
    ASSERT_TRUE((*store)->AddStudy({"..", "", "s.yaml", "", one}).ok());
    ASSERT_TRUE((*store)->AddStudy({"small", "", "s.yaml", "", one}).ok());
  }
  ServerConfig config;
  config.db_path = dir.File("onset.db");
  config.listen = "127.0.0.1:0";
  config.token = kToken;
  config.checkpoint_root = dir.File("ckpt");
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();
  auto workers = v1::WorkerService::NewStub(Channel((*server)->address(), kToken));
  const auto ctx = DeadlineContext;
  v1::RegisterWorkerRequest reg;
  reg.set_host("h");
  reg.add_devices("cpu:0");
  reg.add_devices("cpu:1");
  v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(workers->RegisterWorker(ctx().get(), reg, &registered).ok());
  testing::Remember(registered);
  std::map<std::string, std::string> dirs;  // study -> checkpoint dir
  for (const char* device : {"cpu:0", "cpu:1"}) {
    v1::LeaseJobRequest req;
    req.set_worker_id(registered.worker_id());
    req.set_worker_secret(testing::SecretOf(registered.worker_id()));
    req.add_free_devices(device);
    v1::LeaseJobResponse lease;
    grpc::Status s = workers->LeaseJob(ctx().get(), req, &lease);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_TRUE(lease.has_job());
    dirs[lease.job().study()] = lease.job().checkpoint_dir();
  }
  (*server)->Shutdown();
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_THAT(dirs["small"], StartsWith(dir.File("ckpt") + "/small/"));
  EXPECT_EQ(dirs[".."], "");  // the worker's own work directory, as without a root
}

TEST_F(ServerTest, SubmitLeaseReportFinishResults) {
  grpc::Status status;
  v1::SubmitStudyResponse submitted = Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(submitted.cells_added(), 6);
  EXPECT_EQ(submitted.cells_size(), 6);
  EXPECT_EQ(submitted.study().name(), "small");
  EXPECT_EQ(submitted.study().source_name(), "studies/small.yaml");
  EXPECT_EQ(submitted.study().cells_by_state().at("queued"), 6);
  EXPECT_EQ(Submit(testing::kSmallStudy, &status).cells_added(), 0);

  const std::string worker = Register();
  v1::LeaseJobRequest lease_req;
  lease_req.set_worker_id(worker);
  lease_req.set_worker_secret(testing::SecretOf(worker));
  lease_req.add_free_devices("cpu:0");
  v1::LeaseJobResponse lease;
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  ASSERT_TRUE(lease.has_job());
  const v1::Job& job = lease.job();
  EXPECT_EQ(job.cell_id(), submitted.cells(0).id());
  EXPECT_EQ(job.study(), "small");
  EXPECT_EQ(job.attempt(), 1);
  EXPECT_EQ(job.tokens_budget(), 64'000);
  EXPECT_THAT(job.config_json(), HasSubstr("\"arch\":\"full\""));

  v1::HeartbeatRequest hb;
  hb.set_worker_id(worker);
  hb.set_worker_secret(testing::SecretOf(worker));
  hb.set_lease_id(job.lease_id());
  hb.set_tokens_done(32'000);
  hb.set_tokens_per_second(900);
  v1::HeartbeatResponse hb_resp;
  ASSERT_TRUE(workers_->Heartbeat(Ctx().get(), hb, &hb_resp).ok());
  EXPECT_EQ(hb_resp.lease_ttl_ms(), 60'000);

  v1::ReportMetricsRequest report;
  report.set_worker_id(worker);
  report.set_worker_secret(testing::SecretOf(worker));
  report.set_lease_id(job.lease_id());
  for (auto [name, tokens, value] :
       {std::tuple{"train/loss", 32'000, 3.0}, std::tuple{"train/loss", 64'000, 2.0},
        std::tuple{"niah/acc@128", 64'000, 0.75}}) {
    v1::MetricPoint* p = report.add_points();
    p->set_name(name);
    p->set_tokens(tokens);
    p->set_value(value);
  }
  v1::ReportMetricsResponse report_resp;
  ASSERT_TRUE(workers_->ReportMetrics(Ctx().get(), report, &report_resp).ok());
  EXPECT_EQ(report_resp.accepted(), 3);
  ASSERT_TRUE(workers_->ReportMetrics(Ctx().get(), report, &report_resp).ok());  // re-sent

  v1::GetStudyRequest get;
  get.set_name("small");
  v1::GetStudyResponse got;
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &got).ok());
  ASSERT_EQ(got.cells_size(), 6);
  EXPECT_EQ(got.cells(0).state(), v1::CELL_STATE_RUNNING);
  EXPECT_EQ(got.cells(0).tokens_done(), 32'000);
  EXPECT_DOUBLE_EQ(got.cells(0).latest_loss(), 2.0);
  EXPECT_EQ(got.cells(0).attempts(), 1);
  EXPECT_EQ(got.cells(0).axes().at("window"), "-");
  EXPECT_FALSE(got.cells(1).has_latest_loss());

  v1::FinishJobRequest finish;
  finish.set_worker_id(worker);
  finish.set_worker_secret(testing::SecretOf(worker));
  finish.set_lease_id(job.lease_id());
  finish.set_outcome(v1::JOB_OUTCOME_SUCCEEDED);
  v1::FinishJobResponse finish_resp;
  ASSERT_TRUE(workers_->FinishJob(Ctx().get(), finish, &finish_resp).ok());
  // The lease is gone: the worker must stop.
  grpc::Status again = workers_->FinishJob(Ctx().get(), finish, &finish_resp);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  v1::GetResultsRequest results_req;
  results_req.set_study("small");
  v1::GetResultsResponse results;
  ASSERT_TRUE(studies_->GetResults(Ctx().get(), results_req, &results).ok());
  ASSERT_EQ(results.results_size(), 6);
  EXPECT_EQ(results.results(0).cell().state(), v1::CELL_STATE_SUCCEEDED);
  EXPECT_DOUBLE_EQ(results.results(0).final_metrics().at("train/loss"), 2.0);
  EXPECT_DOUBLE_EQ(results.results(0).final_metrics().at("niah/acc@128"), 0.75);
  EXPECT_EQ(results.results(1).final_metrics_size(), 0);

  v1::ListStudiesResponse list;
  ASSERT_TRUE(studies_->ListStudies(Ctx().get(), v1::ListStudiesRequest(), &list).ok());
  ASSERT_EQ(list.studies_size(), 1);
  EXPECT_EQ(list.studies(0).cells_by_state().at("succeeded"), 1);
  EXPECT_EQ(list.studies(0).cells_by_state().at("queued"), 5);
}

// Workers' rows stay, and each may name a thousand devices: 70 registrations of the largest size
// once made the list too large for one message, and `onset workers` failed for good. The reply
// is bounded; the workers seen longest ago are counted, not sent.
TEST_F(ServerTest, AListOfManyLargeWorkersFitsInOneMessage) {
  for (int w = 0; w < 70; ++w) {
    v1::RegisterWorkerRequest big;
    big.set_host(std::string(256, 'h'));
    big.set_version(std::string(256, 'v'));
    for (int d = 0; d < 1024; ++d) {
      const std::string name = "cuda:" + std::to_string(d) + "-";
      big.add_devices(name + std::string(64 - name.size(), 'x'));  // kMaxDeviceNameBytes
    }
    v1::RegisterWorkerResponse registered;
    ASSERT_TRUE(workers_->RegisterWorker(Ctx().get(), big, &registered).ok());
    testing::Remember(registered);
  }
  v1::ListWorkersResponse listed;
  ASSERT_TRUE(studies_->ListWorkers(Ctx().get(), v1::ListWorkersRequest(), &listed).ok());
  EXPECT_LE(listed.ByteSizeLong(), 4u * 1024 * 1024);
  EXPECT_GT(listed.workers_size(), 0);
  EXPECT_EQ(listed.workers_size() + listed.omitted(), 70);
}

// A call's work is bounded by what one call may name: more ids than a study can have cells are
// refused before the store is asked.
TEST_F(ServerTest, CancelAndRerunRefuseMoreIdsThanAStudyHasCells) {
  grpc::Status status;
  Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::CancelCellsRequest cancel;
  cancel.set_study("small");
  v1::RerunCellsRequest rerun;
  rerun.set_study("small");
  for (int i = 0; i <= kMaxCellIdsPerRequest; ++i) {
    cancel.add_cell_ids("0123456789abcdef");
    rerun.add_cell_ids("0123456789abcdef");
  }
  v1::CancelCellsResponse cancelled;
  grpc::Status refused = studies_->CancelCells(Ctx().get(), cancel, &cancelled);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("at most 100000 a call"));
  v1::RerunCellsResponse queued;
  refused = studies_->RerunCells(Ctx().get(), rerun, &queued);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Nor may a metrics stream name more (each may be a prefix to resolve).
  v1::StreamMetricsRequest stream;
  stream.set_study("small");
  for (int i = 0; i <= kMaxCellIdsPerRequest; ++i) stream.add_cell_ids("abcd");
  auto ctx = Ctx();
  std::unique_ptr<grpc::ClientReader<v1::MetricsChunk>> reader =
      studies_->StreamMetrics(ctx.get(), stream);
  v1::MetricsChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Cancel reaches a running job through its heartbeat; rerun queues the cancelled cells again.
TEST_F(ServerTest, CancelAndRerunOverTheWire) {
  grpc::Status status;
  Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const std::string worker = Register();
  v1::LeaseJobRequest lease_req;
  lease_req.set_worker_id(worker);
  lease_req.set_worker_secret(testing::SecretOf(worker));
  lease_req.add_free_devices("cpu:0");
  v1::LeaseJobResponse lease;
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  ASSERT_TRUE(lease.has_job());

  v1::CancelCellsRequest cancel;
  cancel.set_study("small");
  cancel.add_cell_ids(lease.job().cell_id());
  v1::CancelCellsResponse cancelled;
  ASSERT_TRUE(studies_->CancelCells(Ctx().get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.cancelled(), 1);

  v1::HeartbeatRequest hb;
  hb.set_worker_id(worker);
  hb.set_worker_secret(testing::SecretOf(worker));
  hb.set_lease_id(lease.job().lease_id());
  v1::HeartbeatResponse hb_resp;
  ASSERT_TRUE(workers_->Heartbeat(Ctx().get(), hb, &hb_resp).ok());
  EXPECT_TRUE(hb_resp.cancel());
  v1::FinishJobRequest finish;
  finish.set_worker_id(worker);
  finish.set_worker_secret(testing::SecretOf(worker));
  finish.set_lease_id(lease.job().lease_id());
  finish.set_outcome(v1::JOB_OUTCOME_CANCELLED);
  finish.set_signal(15);
  v1::FinishJobResponse finished;
  ASSERT_TRUE(workers_->FinishJob(Ctx().get(), finish, &finished).ok());

  v1::RerunCellsRequest rerun;
  rerun.set_study("small");
  rerun.add_states(v1::CELL_STATE_QUEUED);
  v1::RerunCellsResponse queued;
  EXPECT_EQ(studies_->RerunCells(Ctx().get(), rerun, &queued).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  rerun.clear_states();
  rerun.add_states(v1::CELL_STATE_RUNNING);  // none runs now
  ASSERT_TRUE(studies_->RerunCells(Ctx().get(), rerun, &queued).ok());
  EXPECT_EQ(queued.queued(), 0);
  rerun.clear_states();  // the default: failed, diverged, cancelled
  ASSERT_TRUE(studies_->RerunCells(Ctx().get(), rerun, &queued).ok());
  EXPECT_EQ(queued.queued(), 1);
  v1::GetStudyRequest get;
  get.set_name("small");
  v1::GetStudyResponse study;
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &study).ok());
  EXPECT_EQ(study.study().cells_by_state().at("queued"), 6);
}

// Cancel and rerun name a cell by a unique prefix of its id as well; a prefix that names none
// or several is refused, and nothing changes.
// RecordExport over the wire: an export named by a prefix of its cell's id is listed by
// DescribeCell; fields out of bounds are refused, naming the field, and record nothing.
TEST_F(ServerTest, ExportsAreRecordedAndListedWithTheirCell) {
  grpc::Status status;
  Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::GetStudyRequest get;
  get.set_name("small");
  v1::GetStudyResponse study;
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &study).ok());
  const std::string id = study.cells(0).id();

  v1::RecordExportRequest record;
  record.set_study("small");
  record.set_cell_id(id.substr(0, 6));
  v1::CellExport* e = record.mutable_exported();
  e->set_format("hf");
  e->set_host("laptop");
  e->set_path("/home/me/exports/lf");
  e->set_bytes(12345);
  e->set_tokens(1000);
  v1::RecordExportResponse recorded;
  ASSERT_TRUE(studies_->RecordExport(Ctx().get(), record, &recorded).ok());

  const auto refused = [&](const std::function<void(v1::CellExport*)>& spoil,
                           const std::string& field) {
    v1::RecordExportRequest bad = record;
    spoil(bad.mutable_exported());
    const grpc::Status s = studies_->RecordExport(Ctx().get(), bad, &recorded);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field;
    EXPECT_THAT(s.error_message(), StartsWith(field)) << s.error_message();
  };
  refused([](v1::CellExport* x) { x->set_format("onnx"); }, "exported.format");
  refused([](v1::CellExport* x) { x->set_host(""); }, "exported.host");
  refused([](v1::CellExport* x) { x->set_host(std::string(256, 'h')); }, "exported.host");
  refused([](v1::CellExport* x) { x->set_path("relative/dir"); }, "exported.path");
  refused([](v1::CellExport* x) { x->set_path("/a\nb"); }, "exported.path");
  refused([](v1::CellExport* x) { x->set_path("/" + std::string(5000, 'p')); }, "exported.path");
  refused([](v1::CellExport* x) { x->set_bytes(-1); }, "exported.bytes");
  v1::RecordExportRequest unknown = record;
  unknown.set_cell_id("ffffffffffffffff");
  EXPECT_EQ(studies_->RecordExport(Ctx().get(), unknown, &recorded).error_code(),
            grpc::StatusCode::NOT_FOUND);

  v1::DescribeCellRequest describe;
  describe.set_study("small");
  describe.set_cell_id(id);
  v1::DescribeCellResponse described;
  ASSERT_TRUE(studies_->DescribeCell(Ctx().get(), describe, &described).ok());
  ASSERT_EQ(described.exports_size(), 1);
  EXPECT_EQ(described.exports(0).format(), "hf");
  EXPECT_EQ(described.exports(0).host(), "laptop");
  EXPECT_EQ(described.exports(0).path(), "/home/me/exports/lf");
  EXPECT_EQ(described.exports(0).bytes(), 12345);
  EXPECT_EQ(described.exports(0).tokens(), 1000);
  EXPECT_GT(described.exports(0).at_unix_ms(), 0);
}

TEST_F(ServerTest, CancelAndRerunTakeAUniquePrefixOfACellsId) {
  grpc::Status status;
  Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::GetStudyRequest get;
  get.set_name("small");
  v1::GetStudyResponse study;
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &study).ok());
  const std::string id = study.cells(0).id();

  v1::CancelCellsRequest cancel;
  cancel.set_study("small");
  cancel.add_cell_ids("fffffff");  // 7 digits: no id of this study begins so (checked below)
  for (const v1::Cell& c : study.cells()) ASSERT_NE(c.id().rfind("fffffff", 0), 0u);
  v1::CancelCellsResponse cancelled;
  EXPECT_EQ(studies_->CancelCells(Ctx().get(), cancel, &cancelled).error_code(),
            grpc::StatusCode::NOT_FOUND);
  cancel.set_cell_ids(0, id.substr(0, 6));
  ASSERT_TRUE(studies_->CancelCells(Ctx().get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.cancelled(), 1);

  v1::RerunCellsRequest rerun;
  rerun.set_study("small");
  rerun.add_cell_ids(id.substr(0, 5));
  v1::RerunCellsResponse queued;
  ASSERT_TRUE(studies_->RerunCells(Ctx().get(), rerun, &queued).ok());
  EXPECT_EQ(queued.queued(), 1);
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &study).ok());
  EXPECT_EQ(study.study().cells_by_state().at("queued"), 6);
}

// A worker id is public (listings, logs, watch streams),
// so it lets nobody act for the worker: every call for it must carry the secret it was given at
// registration. One that deregistered and calls again is told so.
TEST_F(ServerTest, AWorkerIdAloneLetsNobodyActForIt) {
  grpc::Status status;
  Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const std::string victim = Register();
  v1::LeaseJobRequest lease_req;
  lease_req.set_worker_id(victim);
  lease_req.add_free_devices("cpu:0");
  v1::LeaseJobResponse lease;
  for (const std::string& secret : {std::string(), std::string("guess")}) {
    lease_req.set_worker_secret(secret);
    EXPECT_EQ(workers_->LeaseJob(Ctx().get(), lease_req, &lease).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  lease_req.set_worker_secret(testing::SecretOf(victim));
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  ASSERT_TRUE(lease.has_job());
  // Its lease id does not make another client the worker either.
  v1::HeartbeatRequest hb;
  hb.set_worker_id(victim);
  hb.set_lease_id(lease.job().lease_id());
  v1::HeartbeatResponse hb_resp;
  EXPECT_EQ(workers_->Heartbeat(Ctx().get(), hb, &hb_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::FinishJobRequest finish;
  finish.set_worker_id(victim);
  finish.set_lease_id(lease.job().lease_id());
  finish.set_outcome(v1::JOB_OUTCOME_FAILED);
  v1::FinishJobResponse finished;
  EXPECT_EQ(workers_->FinishJob(Ctx().get(), finish, &finished).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::DeregisterWorkerRequest bye;
  bye.set_worker_id(victim);
  v1::DeregisterWorkerResponse done;
  EXPECT_EQ(workers_->DeregisterWorker(Ctx().get(), bye, &done).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // The worker itself goes on; once it says it exits, a call for it is told so.
  hb.set_worker_secret(testing::SecretOf(victim));
  ASSERT_TRUE(workers_->Heartbeat(Ctx().get(), hb, &hb_resp).ok());
  bye.set_worker_secret(testing::SecretOf(victim));
  ASSERT_TRUE(workers_->DeregisterWorker(Ctx().get(), bye, &done).ok());
  grpc::Status told = workers_->LeaseJob(Ctx().get(), lease_req, &lease);
  EXPECT_EQ(told.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(told.error_message(), HasSubstr("register again"));
}

// onset workers lists live workers: one that said it exits is counted, not listed, unless all are
// asked for.
TEST_F(ServerTest, AWorkerThatDeregistersLeavesTheLiveList) {
  const std::string leaving = Register();
  const std::string staying = Register();
  v1::DeregisterWorkerRequest bye;
  bye.set_worker_id(leaving);
  bye.set_worker_secret(testing::SecretOf(leaving));
  v1::DeregisterWorkerResponse done;
  ASSERT_TRUE(workers_->DeregisterWorker(Ctx().get(), bye, &done).ok());
  ASSERT_TRUE(workers_->DeregisterWorker(Ctx().get(), bye, &done).ok());  // idempotent
  // Nobody says another worker exits: a worker id is public, its secret is not.
  bye.set_worker_id(staying);
  bye.set_worker_secret(testing::SecretOf(leaving));
  EXPECT_EQ(workers_->DeregisterWorker(Ctx().get(), bye, &done).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  bye.set_worker_id("w-nobody");
  bye.set_worker_secret(testing::SecretOf("w-nobody"));
  EXPECT_EQ(workers_->DeregisterWorker(Ctx().get(), bye, &done).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  bye.set_worker_id("");
  bye.set_worker_secret(testing::SecretOf(""));
  EXPECT_EQ(workers_->DeregisterWorker(Ctx().get(), bye, &done).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::ListWorkersResponse live;
  ASSERT_TRUE(studies_->ListWorkers(Ctx().get(), v1::ListWorkersRequest(), &live).ok());
  ASSERT_EQ(live.workers_size(), 1);
  EXPECT_EQ(live.workers(0).id(), staying);
  EXPECT_EQ(live.not_live(), 1);
  v1::ListWorkersRequest all;
  all.set_all(true);
  v1::ListWorkersResponse every;
  ASSERT_TRUE(studies_->ListWorkers(Ctx().get(), all, &every).ok());
  ASSERT_EQ(every.workers_size(), 2);
  EXPECT_EQ(every.not_live(), 0);
  for (const v1::Worker& w : every.workers()) {
    EXPECT_EQ(w.exited_unix_ms() > 0, w.id() == leaving) << w.id();
  }
}

TEST_F(ServerTest, ErrorsMapToGrpcCodes) {
  grpc::Status status;
  Submit("name: a\ntrain:\n  lr: fast\n", &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              StartsWith("studies/small.yaml:3: train.lr: must be a number"));

  v1::GetStudyRequest get;
  get.set_name("missing");
  v1::GetStudyResponse got;
  EXPECT_EQ(studies_->GetStudy(Ctx().get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::GetResultsRequest results_req;
  results_req.set_study("missing");
  v1::GetResultsResponse results;
  EXPECT_EQ(studies_->GetResults(Ctx().get(), results_req, &results).error_code(),
            grpc::StatusCode::NOT_FOUND);

  const std::string worker = Register();
  v1::LeaseJobRequest lease_req;
  lease_req.set_worker_id(worker);
  lease_req.set_worker_secret(testing::SecretOf(worker));
  lease_req.add_free_devices("cpu:0");
  v1::LeaseJobResponse lease;
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  EXPECT_FALSE(lease.has_job());  // nothing queued
  lease_req.set_worker_id("w-unknown");
  lease_req.set_worker_secret(testing::SecretOf("w-unknown"));
  EXPECT_EQ(workers_->LeaseJob(Ctx().get(), lease_req, &lease).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  v1::HeartbeatRequest hb;
  hb.set_worker_id(worker);
  hb.set_worker_secret(testing::SecretOf(worker));
  hb.set_lease_id("no-such-lease");
  v1::HeartbeatResponse hb_resp;
  EXPECT_EQ(workers_->Heartbeat(Ctx().get(), hb, &hb_resp).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  v1::FinishJobRequest finish;
  finish.set_worker_id(worker);
  finish.set_worker_secret(testing::SecretOf(worker));
  finish.set_lease_id("no-such-lease");
  v1::FinishJobResponse finish_resp;
  EXPECT_EQ(workers_->FinishJob(Ctx().get(), finish, &finish_resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // outcome unspecified
}

TEST_F(ServerTest, DryRunSaysWhatASubmissionWouldDoAndWritesNothing) {
  grpc::Status status;
  v1::SubmitStudyResponse preview = Submit(testing::kSmallStudy, &status, /*dry_run=*/true);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(preview.cells_size(), 6);
  EXPECT_EQ(preview.cells_added(), 6);
  EXPECT_EQ(preview.new_cell_ids_size(), 6);
  v1::ListStudiesResponse list;
  ASSERT_TRUE(studies_->ListStudies(Ctx().get(), v1::ListStudiesRequest(), &list).ok());
  EXPECT_EQ(list.studies_size(), 0);

  v1::SubmitStudyResponse submitted = Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(submitted.new_cell_ids_size(), 6);
  std::string more = testing::kSmallStudy;
  more.replace(more.find("seeds: 2"), 8, "seeds: 3");
  preview = Submit(more, &status, /*dry_run=*/true);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(preview.cells_size(), 9);
  EXPECT_EQ(preview.new_cell_ids_size(), 3);

  // A file that changes what stored cells mean is refused, in a dry run as in a submission.
  std::string changed = testing::kSmallStudy;
  changed.replace(changed.find("batch_tokens: 512"), 17, "batch_tokens: 1024");
  for (bool dry_run : {true, false}) {
    Submit(changed, &status, dry_run);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(),
                HasSubstr("exists with train.batch_tokens = 512; this file gives 1024"));
  }
}

TEST_F(ServerTest, EveryMethodOfEveryServiceNeedsTheToken) {
  const std::vector<std::string> methods = EveryMethod();
  ASSERT_EQ(methods.size(), 24u);  // a new method fails here until it is listed below
  const std::string& address = server_->address();
  for (const auto& [what, channel] :
       {std::pair{"no token", Channel(address, "")},
        std::pair{"a wrong token", Channel(address, std::string(kToken) + "x")},
        std::pair{"a prefix of the token", Channel(address, std::string(kToken).substr(0, 8))}}) {
    for (const std::string& method : methods) {
      grpc::Status status = CallWithEmptyRequest(channel, method);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method << ", " << what;
      EXPECT_EQ(status.error_message(), common::kUnauthenticatedMessage) << method;
    }
  }
  // A token that is not a bearer token.
  {
    auto plain = Channel(address, "");
    v1::ListStudiesResponse list;
    auto ctx = Ctx();
    ctx->AddMetadata("authorization", std::string("Basic ") + kToken);
    EXPECT_EQ(v1::StudyService::NewStub(plain)->ListStudies(ctx.get(), {}, &list).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  // Nothing was written: no worker registered, no study, no token.
  absl::StatusOr<std::unique_ptr<db::Connection>> db =
      db::Connection::Open(dir_.File("db/onset.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  for (const char* table : {"workers", "studies", "access_tokens"}) {
    absl::StatusOr<db::Statement> count =
        (*db)->Prepare(std::string("SELECT COUNT(*) FROM ") + table);
    ASSERT_TRUE(count.ok() && *count->Step());
    EXPECT_EQ(count->Int(0), 0) << table;
  }

  // With the token every method gets past the check (to answer OK or about the empty request).
  auto channel = Channel(address, kToken);
  for (const std::string& method : methods) {
    EXPECT_NE(CallWithEmptyRequest(channel, method).error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << method;
  }
}

// The role table names every method of every service once, and nothing else.
TEST(MethodRolesTest, TheTableListsEveryMethodOfTheApi) {
  std::set<std::string> listed;
  for (const method_roles::ServiceMethod& m : method_roles::kEveryMethod) {
    EXPECT_TRUE(
        listed.insert("/" + std::string(m.service) + "/" + std::string(m.access.method)).second)
        << m.access.method;
  }
  const std::vector<std::string> methods = EveryMethod();
  EXPECT_EQ(std::set<std::string>(methods.begin(), methods.end()), listed);
}

// Every method is refused to a token of every role that does not allow it (one too weak: read
// for a submit call, submit for an admin call, submit for a worker call, worker for a read call),
// with PERMISSION_DENIED naming the token, its role, the method and what it needs; and a token of
// exactly the role it needs gets past the check.
TEST_F(ServerTest, EveryMethodOfEveryServiceRefusesATokenOfATooWeakRole) {
  auto access = v1::AccessService::NewStub(Channel(server_->address(), kToken));
  std::map<common::Role, std::string> secrets;
  for (common::Role role :
       {common::Role::kRead, common::Role::kWorker, common::Role::kSubmit, common::Role::kAdmin}) {
    v1::CreateTokenRequest create;
    create.set_name("t-" + std::string(common::RoleName(role)));
    create.set_role(std::string(common::RoleName(role)));
    v1::CreateTokenResponse created;
    ASSERT_TRUE(access->CreateToken(Ctx().get(), create, &created).ok());
    secrets[role] = created.secret();
  }
  int refused = 0;
  for (const method_roles::ServiceMethod& m : method_roles::kEveryMethod) {
    const std::string method = "/" + std::string(m.service) + "/" + std::string(m.access.method);
    for (const auto& [role, secret] : secrets) {
      grpc::Status status = CallWithEmptyRequest(Channel(server_->address(), secret), method);
      if (common::RoleAllows(role, m.access.needs)) {
        EXPECT_NE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method;
        EXPECT_THAT(status.error_message(), ::testing::Not(HasSubstr("has role"))) << method;
        continue;
      }
      ++refused;
      EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
          << method << " with a " << common::RoleName(role) << " token";
      EXPECT_EQ(status.error_message(), "token 't-" + std::string(common::RoleName(role)) +
                                            "' has role " + std::string(common::RoleName(role)) +
                                            "; " + std::string(m.access.method) + " needs " +
                                            std::string(common::RoleName(m.access.needs)));
    }
  }
  // read: 7 methods refuse 1 role; submit: 4 refuse 2; worker: 7 refuse 2; admin: 6 refuse 3.
  EXPECT_EQ(refused, 7 * 1 + 4 * 2 + 7 * 2 + 6 * 3);
  // The roles the brief names: read is refused Backup, registering a worker, leasing a cell and
  // cancelling cells.
  for (const char* method :
       {"/onset.v1.StudyService/Backup", "/onset.v1.WorkerService/RegisterWorker",
        "/onset.v1.WorkerService/LeaseJob", "/onset.v1.StudyService/CancelCells"}) {
    EXPECT_EQ(
        CallWithEmptyRequest(Channel(server_->address(), secrets[common::Role::kRead]), method)
            .error_code(),
        grpc::StatusCode::PERMISSION_DENIED)
        << method;
  }
  // Nothing was written by the refused calls: no worker, no study.
  absl::StatusOr<std::unique_ptr<db::Connection>> db =
      db::Connection::Open(dir_.File("db/onset.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<db::Statement> count = (*db)->Prepare("SELECT COUNT(*) FROM studies");
  ASSERT_TRUE(count.ok() && *count->Step());
  EXPECT_EQ(count->Int(0), 0);
}

TEST_F(ServerTest, OnlyTheHolderOfTheCurrentLeaseReportsOnAJob) {
  grpc::Status status;
  Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok());
  const std::string holder = Register();
  const std::string other = Register();
  v1::LeaseJobRequest lease_req;
  lease_req.set_worker_id(holder);
  lease_req.set_worker_secret(testing::SecretOf(holder));
  lease_req.add_free_devices("cpu:0");
  v1::LeaseJobResponse lease;
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  ASSERT_TRUE(lease.has_job());
  const std::string& lease_id = lease.job().lease_id();

  v1::HeartbeatRequest hb;
  hb.set_worker_id(other);
  hb.set_worker_secret(testing::SecretOf(other));
  hb.set_lease_id(lease_id);
  hb.set_tokens_done(9'000);
  v1::HeartbeatResponse hb_resp;
  grpc::Status refused = workers_->Heartbeat(Ctx().get(), hb, &hb_resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), ::testing::Not(HasSubstr(holder)));
  v1::ReportMetricsRequest report;
  report.set_worker_id(other);
  report.set_worker_secret(testing::SecretOf(other));
  report.set_lease_id(lease_id);
  v1::MetricPoint* point = report.add_points();
  point->set_name("train/loss");
  point->set_tokens(9'000);
  point->set_value(1.0);
  v1::ReportMetricsResponse report_resp;
  EXPECT_EQ(workers_->ReportMetrics(Ctx().get(), report, &report_resp).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::FinishJobRequest finish;
  finish.set_worker_id(other);
  finish.set_worker_secret(testing::SecretOf(other));
  finish.set_lease_id(lease_id);
  finish.set_outcome(v1::JOB_OUTCOME_SUCCEEDED);
  v1::FinishJobResponse finish_resp;
  EXPECT_EQ(workers_->FinishJob(Ctx().get(), finish, &finish_resp).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  v1::GetStudyRequest get;
  get.set_name("small");
  v1::GetStudyResponse got;
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &got).ok());
  EXPECT_EQ(got.cells(0).state(), v1::CELL_STATE_RUNNING);
  EXPECT_EQ(got.cells(0).tokens_done(), 0);
  EXPECT_FALSE(got.cells(0).has_latest_loss());

  // The holder still can.
  finish.set_worker_id(holder);
  finish.set_worker_secret(testing::SecretOf(holder));
  EXPECT_TRUE(workers_->FinishJob(Ctx().get(), finish, &finish_resp).ok());
}

TEST_F(ServerTest, RestartKeepsStateAndCanRequeueRunningCells) {
  grpc::Status status;
  Submit(testing::kSmallStudy, &status);
  ASSERT_TRUE(status.ok());
  const std::string worker = Register();
  v1::LeaseJobRequest lease_req;
  lease_req.set_worker_id(worker);
  lease_req.set_worker_secret(testing::SecretOf(worker));
  lease_req.add_free_devices("cpu:0");
  v1::LeaseJobResponse lease;
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  ASSERT_TRUE(lease.has_job());

  server_->Shutdown();
  server_->Wait();  // returns at once after Shutdown
  StartServer(/*requeue_running=*/true);

  v1::GetStudyRequest get;
  get.set_name("small");
  v1::GetStudyResponse got;
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &got).ok());
  EXPECT_EQ(got.cells(0).id(), lease.job().cell_id());
  EXPECT_EQ(got.cells(0).state(), v1::CELL_STATE_QUEUED);
  EXPECT_THAT(got.cells(0).last_error(), HasSubstr("restarted"));

  // The old worker id survives; the cell is leased again as attempt 2.
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  ASSERT_TRUE(lease.has_job());
  EXPECT_EQ(lease.job().attempt(), 2);
}

TEST_F(ServerTest, JobsRunOnTheDevicesTheirCellsNeed) {
  grpc::Status status;
  v1::SubmitStudyResponse submitted =
      Submit(std::string(testing::kSmallStudy) + "resources: {devices: 2}\n", &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(submitted.cells(0).devices(), 2);

  v1::RegisterWorkerRequest reg;
  reg.set_host("gpu-host");
  reg.set_version("test");
  for (const char* device : {"cuda:0", "cuda:1", "cuda:2"}) reg.add_devices(device);
  v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(workers_->RegisterWorker(Ctx().get(), reg, &registered).ok());
  testing::Remember(registered);

  // One free device is not enough for a cell that needs two.
  v1::LeaseJobRequest lease_req;
  lease_req.set_worker_id(registered.worker_id());
  lease_req.set_worker_secret(testing::SecretOf(registered.worker_id()));
  lease_req.add_free_devices("cuda:2");
  v1::LeaseJobResponse lease;
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  EXPECT_FALSE(lease.has_job());
  lease_req.add_free_devices("cuda:0");
  lease_req.add_free_devices("cuda:1");
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease_req, &lease).ok());
  ASSERT_TRUE(lease.has_job());
  EXPECT_THAT(lease.job().devices(), ElementsAre("cuda:2", "cuda:0"));

  v1::ListWorkersResponse listed;
  ASSERT_TRUE(studies_->ListWorkers(Ctx().get(), v1::ListWorkersRequest(), &listed).ok());
  ASSERT_EQ(listed.workers_size(), 1);
  EXPECT_EQ(listed.workers(0).slots(), 3);
  EXPECT_THAT(listed.workers(0).devices(), ElementsAre("cuda:0", "cuda:1", "cuda:2"));
  ASSERT_EQ(listed.workers(0).jobs_size(), 1);
  EXPECT_EQ(listed.workers(0).jobs(0).cell_id(), lease.job().cell_id());
  EXPECT_THAT(listed.workers(0).jobs(0).devices(), ElementsAre("cuda:2", "cuda:0"));

  // A device the worker does not have is refused.
  v1::LeaseJobRequest foreign;
  foreign.set_worker_id(registered.worker_id());
  foreign.set_worker_secret(testing::SecretOf(registered.worker_id()));
  foreign.add_free_devices("cuda:9");
  EXPECT_EQ(workers_->LeaseJob(Ctx().get(), foreign, &lease).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(ServerConfigTest, ValidateNamesTheBadField) {
  ServerConfig config;
  config.db_path = "x.db";
  config.token = kToken;
  EXPECT_TRUE(config.Validate().ok());
  config.lease_ttl = config.heartbeat_interval;
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("lease_ttl:"));
  config = ServerConfig();
  config.token = kToken;
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("db_path:"));
  config.db_path = "x.db";
  config.listen = "7070";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("listen:"));
}

TEST(ServerConfigTest, ATokenIsRequired) {
  ServerConfig config;
  config.db_path = "x.db";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("token:"));
  config.token = "short";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("token:"));
  config.token = std::string(kToken) + " with spaces";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("token:"));
}

TEST(ServerConfigTest, OtherMachinesAreServedOnlyWithTlsOrWhenAllowed) {
  ServerConfig config;
  config.db_path = "x.db";
  config.token = kToken;
  for (const char* local : {"127.0.0.1:7070", "localhost:7070", "127.1.2.3:0", "[::1]:7070"}) {
    config.listen = local;
    EXPECT_TRUE(config.Validate().ok()) << local;
  }
  for (const char* remote : {"0.0.0.0:7070", "[::]:7070", "10.0.0.5:7070", "node1:7070"}) {
    config.listen = remote;
    EXPECT_THAT(
        std::string(config.Validate().message()),
        ::testing::AllOf(StartsWith("listen:"), HasSubstr("--tls-cert"), HasSubstr("--insecure")))
        << remote;
  }
  config.allow_insecure_remote = true;
  EXPECT_TRUE(config.Validate().ok());
  config.allow_insecure_remote = false;
  config.tls_cert_file = "cert.pem";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("tls_key_file:"));
  config.tls_key_file = "key.pem";
  EXPECT_TRUE(config.Validate().ok());  // files are read by Start
  config.tls_cert_file.clear();
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("tls_cert_file:"));
}

TEST(ServerConfigTest, TheMetricsPageStaysOnLoopbackUnlessAllowed) {
  ServerConfig config;
  config.db_path = "x.db";
  config.token = kToken;
  config.metrics_listen = "127.0.0.1:9464";
  EXPECT_TRUE(config.Validate().ok());
  config.metrics_listen = "9464";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("metrics_listen:"));
  config.metrics_listen = "0.0.0.0:9464";
  EXPECT_THAT(std::string(config.Validate().message()),
              ::testing::AllOf(StartsWith("metrics_listen:"), HasSubstr("--insecure")));
  // TLS on the gRPC port does not make the plain-HTTP page safe to expose.
  config.tls_cert_file = "cert.pem";
  config.tls_key_file = "key.pem";
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("metrics_listen:"));
  config.allow_insecure_remote = true;
  EXPECT_TRUE(config.Validate().ok());
  config.metrics_max_studies = -1;
  EXPECT_THAT(std::string(config.Validate().message()), StartsWith("metrics_max_studies:"));
}

// A coordinator serving TLS with a self-signed certificate.
class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tls_ = onset::testutil::MakeSelfSigned();
    ASSERT_FALSE(tls_.cert_pem.empty());
    std::ofstream(dir_.File("cert.pem")) << tls_.cert_pem;
    std::ofstream(dir_.File("key.pem")) << tls_.key_pem;
    config_.db_path = dir_.File("onset.db");
    config_.listen = "127.0.0.1:0";
    config_.token = kToken;
    config_.tls_cert_file = dir_.File("cert.pem");
    config_.tls_key_file = dir_.File("key.pem");
  }

  grpc::Status List(const std::shared_ptr<grpc::Channel>& channel) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ListStudiesResponse response;
    return v1::StudyService::NewStub(channel)->ListStudies(&context, {}, &response);
  }

  testutil::TempDir dir_;
  onset::testutil::SelfSigned tls_;
  ServerConfig config_;
};

TEST_F(TlsServerTest, AcceptsClientsThatTrustItsCertificateOnly) {
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config_);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE((*server)->tls());
  const std::string address = (*server)->address();

  grpc::Status trusted = List(Channel(address, kToken, tls_.cert_pem));
  EXPECT_TRUE(trusted.ok()) << trusted.error_message();
  // TLS still needs the token.
  EXPECT_EQ(List(Channel(address, "", tls_.cert_pem)).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // A plaintext client, or one trusting another certificate, gets no connection.
  EXPECT_EQ(List(Channel(address, kToken)).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(List(Channel(address, kToken, onset::testutil::MakeSelfSigned().cert_pem)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // A TLS server also serves other machines without --insecure.
  (*server)->Shutdown();
  config_.listen = "0.0.0.0:0";
  EXPECT_TRUE(config_.Validate().ok());
}

TEST_F(TlsServerTest, ABadCertificateOrKeyFailsTheStartNamingTheFile) {
  std::ofstream(dir_.File("other-key.pem")) << onset::testutil::MakeSelfSigned().key_pem;
  config_.tls_key_file = dir_.File("other-key.pem");
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config_);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr(config_.tls_key_file));
  config_.tls_cert_file = dir_.File("missing.pem");
  EXPECT_EQ(CoordinatorServer::Start(config_).status().code(), absl::StatusCode::kNotFound);
}

TEST(ServerStartTest, ABusyPortIsUnavailable) {
  testutil::TempDir dir;
  ServerConfig config;
  config.db_path = dir.File("a.db");
  config.listen = "127.0.0.1:0";
  config.token = kToken;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> first = CoordinatorServer::Start(config);
  ASSERT_TRUE(first.ok()) << first.status();
  config.db_path = dir.File("b.db");
  config.listen = (*first)->address();
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> second = CoordinatorServer::Start(config);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ServerTest, StudiesAndResultsComeInPagesAndSubmitInPieces) {
  // 2,500 cells: more than a submit piece and a default page (2,000) hold.
  std::string yaml = testing::kSmallStudy;
  yaml.replace(yaml.find("name: small"), 11, "name: wide");
  yaml.replace(yaml.find("seeds: 2"), 8, "seeds: 500");
  yaml.replace(yaml.find("window: [16, 32]"), 16, "window: [8, 16, 32, 48]");
  grpc::Status status;
  v1::SubmitStudyResponse preview = Submit(yaml, &status, /*dry_run=*/true);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(submit_pieces_, 2);
  EXPECT_EQ(preview.cells_in_file(), 2500);
  EXPECT_EQ(preview.cells_size(), 2500);
  EXPECT_EQ(preview.new_cell_ids_size(), 2500);

  submit_pieces_ = 0;
  v1::SubmitStudyResponse submitted = Submit(yaml, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(submit_pieces_, 2);
  EXPECT_EQ(submitted.cells_added(), 2500);
  ASSERT_EQ(submitted.cells_size(), 2500);
  std::set<std::string> fresh(submitted.new_cell_ids().begin(), submitted.new_cell_ids().end());
  EXPECT_EQ(fresh.size(), 2500u);

  // Default pages: 2,000 then 500.
  v1::GetStudyRequest get;
  get.set_name("wide");
  v1::GetStudyResponse page;
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &page).ok());
  EXPECT_EQ(page.cells_size(), 2000);
  EXPECT_EQ(page.study().cells_total(), 2500);
  ASSERT_FALSE(page.next_page_token().empty());
  get.set_page_token(page.next_page_token());
  ASSERT_TRUE(studies_->GetStudy(Ctx().get(), get, &page).ok());
  EXPECT_EQ(page.cells_size(), 500);
  EXPECT_EQ(page.cells(499).id(), submitted.cells(2499).id());
  EXPECT_TRUE(page.next_page_token().empty());

  // Pages of 999 results: 999, 999, 502, in the submission's order.
  v1::GetResultsRequest results_req;
  results_req.set_study("wide");
  results_req.set_page_size(999);
  std::vector<int> sizes;
  std::vector<std::string> ids;
  do {
    v1::GetResultsResponse results;
    ASSERT_TRUE(studies_->GetResults(Ctx().get(), results_req, &results).ok());
    sizes.push_back(results.results_size());
    for (const v1::CellResult& r : results.results()) ids.push_back(r.cell().id());
    results_req.set_page_token(results.next_page_token());
  } while (!results_req.page_token().empty());
  EXPECT_THAT(sizes, ElementsAre(999, 999, 502));
  ASSERT_EQ(ids.size(), 2500u);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], submitted.cells(i).id()) << i;

  // Bad page requests say what is wrong.
  get.set_page_token("not-a-token");
  EXPECT_EQ(studies_->GetStudy(Ctx().get(), get, &page).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  get.set_page_token("");
  get.set_page_size(10'001);
  grpc::Status too_big = studies_->GetStudy(Ctx().get(), get, &page);
  EXPECT_EQ(too_big.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(too_big.error_message(), HasSubstr("page_size"));
}

// ListStudies answers a page at a time (study_listing.h), the oldest first, with what is left
// counted and a token that leads on.
TEST_F(ServerTest, StudiesAreListedInPages) {
  grpc::Status status;
  for (const char* name : {"one", "two", "three"}) {
    std::string yaml = testing::kSmallStudy;
    yaml.replace(yaml.find("name: small"), 11, std::string("name: ") + name);
    Submit(yaml, &status);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  v1::ListStudiesRequest request;
  request.set_page_size(2);
  v1::ListStudiesResponse page;
  ASSERT_TRUE(studies_->ListStudies(Ctx().get(), request, &page).ok());
  ASSERT_EQ(page.studies_size(), 2);
  EXPECT_EQ(page.studies(0).name(), "one");
  EXPECT_EQ(page.studies(1).name(), "two");
  EXPECT_EQ(page.omitted(), 1);
  ASSERT_FALSE(page.next_page_token().empty());
  request.set_page_token(page.next_page_token());
  ASSERT_TRUE(studies_->ListStudies(Ctx().get(), request, &page).ok());
  ASSERT_EQ(page.studies_size(), 1);
  EXPECT_EQ(page.studies(0).name(), "three");
  EXPECT_EQ(page.omitted(), 0);
  EXPECT_EQ(page.next_page_token(), "");

  // Without paging: every study of a small coordinator in one reply, as before.
  ASSERT_TRUE(studies_->ListStudies(Ctx().get(), v1::ListStudiesRequest(), &page).ok());
  EXPECT_EQ(page.studies_size(), 3);
  EXPECT_EQ(page.next_page_token(), "");

  request.set_page_token("not-a-token");
  grpc::Status bad = studies_->ListStudies(Ctx().get(), request, &page);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("page_token"));
}

// A study's file name is shown in every listing: it is bounded like a path.
TEST_F(ServerTest, ASubmissionWithAFileNameLongerThanAPathIsRefused) {
  v1::SubmitStudyRequest request;
  request.set_source_name(std::string(kMaxSourceNameBytes + 1, 'x'));
  request.set_yaml(testing::kSmallStudy);
  auto ctx = Ctx();
  auto reader = studies_->SubmitStudy(ctx.get(), request);
  v1::SubmitStudyResponse piece;
  EXPECT_FALSE(reader->Read(&piece));
  const grpc::Status refused = reader->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("source_name: 4097 bytes; at most 4096"));
  v1::ListStudiesResponse list;
  ASSERT_TRUE(studies_->ListStudies(Ctx().get(), v1::ListStudiesRequest(), &list).ok());
  EXPECT_EQ(list.studies_size(), 0);
}

TEST(ServerStartTest, ASecondCoordinatorOnTheSameDatabaseIsRefusedUntilTheFirstStops) {
  testutil::TempDir dir;
  ServerConfig config;
  config.db_path = dir.File("onset.db");
  config.listen = "127.0.0.1:0";
  config.token = kToken;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> first = CoordinatorServer::Start(config);
  ASSERT_TRUE(first.ok()) << first.status();

  absl::StatusOr<std::unique_ptr<CoordinatorServer>> second = CoordinatorServer::Start(config);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("database " + config.db_path +
                                                   " is in use: pid " + std::to_string(getpid())));

  (*first)->Shutdown();  // releases the lock; the object lives on
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> third = CoordinatorServer::Start(config);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST(ServerStartTest, AnEmptyDatabaseFileIsRefusedUnlessInitEmptyDb) {
  testutil::TempDir dir;
  ServerConfig config;
  config.db_path = dir.File("onset.db");
  config.listen = "127.0.0.1:0";
  config.token = kToken;
  std::ofstream(config.db_path).close();
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> refused = CoordinatorServer::Start(config);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("is an empty file (0 bytes)"));

  config.init_empty_db = true;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> started = CoordinatorServer::Start(config);
  EXPECT_TRUE(started.ok()) << started.status();
}

// Every cell read (GetStudy, watch snapshots, SubmitStudy's cells) carries how the cell runs.
TEST(CellProtoTest, ACellCarriesItsRoleTrunkAndWait) {
  CellInfo branch;
  branch.id = "b1";
  branch.role = CellRole::kBranch;
  branch.trunk_id = "t1";
  branch.branch_tokens = 100;
  branch.waiting_for_trunk = true;
  v1::Cell out;
  ToProto(branch, &out);
  EXPECT_EQ(out.role(), "branch");
  EXPECT_EQ(out.trunk_id(), "t1");
  EXPECT_EQ(out.branch_tokens(), 100);
  EXPECT_TRUE(out.waiting_for_trunk());
  v1::Cell alone;
  ToProto(CellInfo{}, &alone);
  EXPECT_EQ(alone.role(), "cell");
  EXPECT_EQ(alone.trunk_id(), "");
  EXPECT_FALSE(alone.waiting_for_trunk());
}

}  // namespace
}  // namespace onset::coordinator

namespace onset::coordinator {
namespace {

// Cells of long words (a worker's failure reason, a study file's axis values) fill replies by
// bytes before they do by count: GetStudy, GetResults and a watch's snapshot stop each message
// before kMaxCellsReplyBytes and go on where they stopped, so that no message passes gRPC's 4 MiB
// and every cell is sent once.
TEST(ServerCellRepliesTest, RepliesOfLongCellsStayUnderTheByteBoundAndMissNoCell) {
  testutil::TempDir dir;
  size_t cells = 0;  // 3 a seed (full attention takes no window)
  {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir.File("onset.db"), common::SystemClock());
    ASSERT_TRUE(store.ok()) << store.status();
    std::string yaml = testing::kSmallStudy;
    yaml.replace(yaml.find("seeds: 2"), 8, "seeds: 700");
    absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", yaml);
    ASSERT_TRUE(spec.ok()) << spec.status();
    cells = spec->cells.size();
    ASSERT_GE(cells, kPageCells);
    ASSERT_TRUE((*store)->AddStudy({spec->name, "", "s.yaml", yaml, spec->cells}).ok());
  }
  {
    // Each cell says 3 KB of why it stopped: 6 MB for the default page of 2,000 cells.
    absl::StatusOr<std::unique_ptr<db::Connection>> db = db::Connection::Open(dir.File("onset.db"));
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("UPDATE cells SET note = printf('%.3000c', 'x')").ok());
  }
  ServerConfig config;
  config.db_path = dir.File("onset.db");
  config.listen = "127.0.0.1:0";
  config.token = kToken;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();
  auto studies = v1::StudyService::NewStub(Channel((*server)->address(), kToken));
  const auto ctx = DeadlineContext;

  std::set<std::string> seen;
  int pages = 0;
  v1::GetStudyRequest get;
  get.set_name("small");
  do {
    v1::GetStudyResponse page;
    grpc::Status s = studies->GetStudy(ctx().get(), get, &page);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LE(page.ByteSizeLong(), kMaxCellsReplyBytes + 16 * 1024);
    for (const v1::Cell& c : page.cells()) EXPECT_TRUE(seen.insert(c.id()).second) << c.id();
    get.set_page_token(page.next_page_token());
    ++pages;
  } while (!get.page_token().empty() && pages < 100);
  EXPECT_EQ(seen.size(), cells);
  EXPECT_GE(pages, 2);

  seen.clear();
  v1::GetResultsRequest results;
  results.set_study("small");
  pages = 0;
  do {
    v1::GetResultsResponse page;
    grpc::Status s = studies->GetResults(ctx().get(), results, &page);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LE(page.ByteSizeLong(), kMaxCellsReplyBytes + 16 * 1024);
    for (const v1::CellResult& r : page.results()) EXPECT_TRUE(seen.insert(r.cell().id()).second);
    results.set_page_token(page.next_page_token());
    ++pages;
  } while (!results.page_token().empty() && pages < 100);
  EXPECT_EQ(seen.size(), cells);

  seen.clear();
  v1::WatchStudyRequest watch;
  watch.set_study("small");
  auto watching = ctx();
  std::unique_ptr<grpc::ClientReader<v1::WatchStudyResponse>> reader =
      studies->WatchStudy(watching.get(), watch);
  v1::WatchStudyResponse update;
  int messages = 0;
  while (reader->Read(&update)) {
    ++messages;
    EXPECT_LE(update.ByteSizeLong(), kMaxCellsReplyBytes + 16 * 1024);
    for (const v1::Cell& c : update.snapshot().cells()) EXPECT_TRUE(seen.insert(c.id()).second);
    if (!update.snapshot_more()) break;
  }
  watching->TryCancel();
  reader->Finish();
  EXPECT_EQ(seen.size(), cells);
  EXPECT_GE(messages, 2);
  (*server)->Shutdown();
}

}  // namespace
}  // namespace onset::coordinator
