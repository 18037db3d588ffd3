// WorkerService's checks of what workers send, through a real CoordinatorServer on port 0: a bad
// metric point, log line or token count costs itself only, never the points, lines or lease
// beside it.
#include "coordinator/rpc/worker_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/grpc_auth.h"
#include "common/metric_limits.h"
#include "coordinator/server/coordinator_server.h"
#include "onset/v1/onset.grpc.pb.h"
#include "tests/coordinator/rpc/worker_secrets.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
namespace v1 = ::onset::v1;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef-test-token";

class WorkerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    config.db_path = dir_.File("onset.db");
    config.listen = "127.0.0.1:0";
    config.lease_ttl = std::chrono::milliseconds(60'000);
    config.token = kToken;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto channel = common::NewClientChannel(server_->address(), common::ClientSecurity{kToken, ""});
    studies_ = v1::StudyService::NewStub(channel);
    workers_ = v1::WorkerService::NewStub(channel);

    v1::SubmitStudyRequest submit;
    submit.set_source_name("small.yaml");
    submit.set_yaml(testing::kSmallStudy);
    v1::SubmitStudyResponse submitted;
    auto submit_context = Ctx();
    auto reader = studies_->SubmitStudy(submit_context.get(), submit);
    while (reader->Read(&submitted)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
    v1::RegisterWorkerRequest reg;
    reg.set_host("test-host");
    reg.set_slots(1);
    v1::RegisterWorkerResponse registered;
    ASSERT_TRUE(workers_->RegisterWorker(Ctx().get(), reg, &registered).ok());
    testing::Remember(registered);
    worker_ = registered.worker_id();
    v1::LeaseJobRequest lease;
    lease.set_worker_id(worker_);
    lease.set_worker_secret(testing::SecretOf(worker_));
    lease.add_free_devices("cpu:0");
    v1::LeaseJobResponse leased;
    ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease, &leased).ok());
    ASSERT_TRUE(leased.has_job());
    job_ = leased.job();
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }

  grpc::Status Heartbeat(int64_t tokens, double tokens_per_second) {
    v1::HeartbeatRequest hb;
    hb.set_worker_id(worker_);
    hb.set_worker_secret(testing::SecretOf(worker_));
    hb.set_lease_id(job_.lease_id());
    hb.set_tokens_done(tokens);
    hb.set_tokens_per_second(tokens_per_second);
    v1::HeartbeatResponse resp;
    return workers_->Heartbeat(Ctx().get(), hb, &resp);
  }

  v1::Cell Cell() {
    v1::GetStudyRequest get;
    get.set_name("small");
    v1::GetStudyResponse got;
    EXPECT_TRUE(studies_->GetStudy(Ctx().get(), get, &got).ok());
    for (const v1::Cell& c : got.cells()) {
      if (c.id() == job_.cell_id()) return c;
    }
    ADD_FAILURE() << "no cell " << job_.cell_id();
    return {};
  }

  // Each row of `sql` on the database, its columns joined with '|'.
  std::vector<std::string> Rows(const std::string& sql) {
    std::vector<std::string> rows;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(dir_.File("onset.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
              SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
      std::string row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const unsigned char* text = sqlite3_column_text(stmt, i);
        row += (i ? "|" : "") + std::string(text ? reinterpret_cast<const char*>(text) : "NULL");
      }
      rows.push_back(row);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return rows;
  }

  testutil::TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<v1::StudyService::Stub> studies_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
  std::string worker_;
  v1::Job job_;
};

TEST_F(WorkerServiceTest, ARegistrationWithOversizedFieldsIsRefusedAndSaysWhich) {
  auto refused = [&](const v1::RegisterWorkerRequest& req) {
    v1::RegisterWorkerResponse resp;
    grpc::Status s = workers_->RegisterWorker(Ctx().get(), req, &resp);
    testing::Remember(resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    return s.error_message();
  };
  v1::RegisterWorkerRequest req;
  req.set_host(std::string(100'000, 'h'));
  EXPECT_THAT(refused(req), ::testing::HasSubstr("host: 100000 bytes"));
  req.set_host("h");
  req.set_version(std::string(257, 'v'));
  EXPECT_THAT(refused(req), ::testing::HasSubstr("version: 257 bytes"));
  req.set_version("v");
  req.set_slots(1'000'000);
  EXPECT_THAT(refused(req), ::testing::HasSubstr("slots"));
  req.set_slots(1);
  req.add_devices(std::string(65, 'd'));
  EXPECT_THAT(refused(req), ::testing::HasSubstr("is not a device name"));
}

TEST_F(WorkerServiceTest, BadMetricPointsAreRefusedOneByOneAndTheRestStored) {
  v1::ReportMetricsRequest report;
  report.set_worker_id(worker_);
  report.set_worker_secret(testing::SecretOf(worker_));
  report.set_lease_id(job_.lease_id());
  auto add = [&](const std::string& name, int64_t tokens, double value) {
    v1::MetricPoint* p = report.add_points();
    p->set_name(name);
    p->set_tokens(tokens);
    p->set_value(value);
  };
  add("train/loss", 1000, 3.0);
  add("", 1000, 1.0);                                                       // no name
  add("train/loss", -1, 2.9);                                               // negative tokens
  add("train/loss", std::numeric_limits<int64_t>::max(), 2.8);              // beyond any run
  add(std::string(300, 'n'), 1000, 1.0);                                    // name too long
  add("bad name", 1000, 1.0);                                               // not the charset
  add("eval/heldout_loss", 2000, std::numeric_limits<double>::infinity());  // stored as NULL
  add("train/loss", 2000, 2.5);
  v1::ReportMetricsResponse resp;
  grpc::Status s = workers_->ReportMetrics(Ctx().get(), report, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.accepted(), 3);
  EXPECT_THAT(
      Rows("SELECT name, tokens, value FROM metrics ORDER BY name, tokens"),
      ElementsAre("eval/heldout_loss|2000|NULL", "train/loss|1000|3.0", "train/loss|2000|2.5"));
  // A batch of nothing but bad points still leaves the lease alone.
  report.clear_points();
  add("", 1, 1);
  ASSERT_TRUE(workers_->ReportMetrics(Ctx().get(), report, &resp).ok());
  EXPECT_EQ(resp.accepted(), 0);
  EXPECT_TRUE(Heartbeat(3000, 10).ok());
}

TEST_F(WorkerServiceTest, AbsurdProgressRenewsTheLeaseButIsNotStored) {
  ASSERT_TRUE(Heartbeat(4096, 900).ok());
  EXPECT_EQ(Cell().tokens_done(), 4096);
  for (int64_t bad :
       {int64_t{-388313981572612}, common::kMaxTokens + 1, std::numeric_limits<int64_t>::max()}) {
    grpc::Status s = Heartbeat(bad, 900);
    EXPECT_TRUE(s.ok()) << bad << ": " << s.error_message();
    EXPECT_EQ(Cell().tokens_done(), 4096) << bad;
  }
  ASSERT_TRUE(Heartbeat(5000, -3).ok());
  EXPECT_EQ(Cell().tokens_done(), 5000);
  EXPECT_EQ(Cell().tokens_per_second(), 0);
}

TEST_F(WorkerServiceTest, LogLinesWithBadNumbersAreRefusedOneByOne) {
  v1::AppendLogsRequest append;
  append.set_worker_id(worker_);
  append.set_worker_secret(testing::SecretOf(worker_));
  append.set_lease_id(job_.lease_id());
  for (int64_t n : {int64_t{1}, int64_t{0}, int64_t{-5}, int64_t{2}}) {
    v1::LogLine* line = append.add_lines();
    line->set_line(n);
    line->set_text("line " + std::to_string(n));
  }
  v1::AppendLogsResponse resp;
  grpc::Status s = workers_->AppendLogs(Ctx().get(), append, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.accepted(), 2);
  EXPECT_THAT(Rows("SELECT line, text FROM log_lines ORDER BY line"),
              ElementsAre("1|line 1", "2|line 2"));
}

TEST_F(WorkerServiceTest, AnAttemptsEndIsRecordedWithItsTextsBounded) {
  v1::FinishJobRequest finish;
  finish.set_worker_id(worker_);
  finish.set_worker_secret(testing::SecretOf(worker_));
  finish.set_lease_id(job_.lease_id());
  finish.set_outcome(v1::JOB_OUTCOME_FAILED);
  finish.set_exit_code(1);
  std::string reason;
  while (reason.size() < 100'000) reason += "\xE2\x82\xAC";  // 3-byte characters
  finish.set_reason(reason);
  finish.set_stderr_tail(std::string(1'000'000, 't'));
  v1::FinishJobResponse resp;
  grpc::Status s = workers_->FinishJob(Ctx().get(), finish, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::vector<std::string> sizes =
      Rows("SELECT length(CAST(reason AS BLOB)), length(stderr_tail) FROM attempts");
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(sizes[0], "4095|65536");  // 1365 characters: the cut falls between two
}

// With nothing to lease now, the answer says how much may come later: here the failed cell
// waiting out its backoff; nothing once it has failed for good.
TEST_F(WorkerServiceTest, AnEmptyLeaseSaysHowManyQueuedCellsWaitForThisWorker) {
  v1::FinishJobRequest finish;
  finish.set_worker_id(worker_);
  finish.set_worker_secret(testing::SecretOf(worker_));
  finish.set_lease_id(job_.lease_id());
  finish.set_outcome(v1::JOB_OUTCOME_FAILED);
  finish.set_exit_code(1);
  v1::FinishJobResponse finished;
  ASSERT_TRUE(workers_->FinishJob(Ctx().get(), finish, &finished).ok());
  v1::LeaseJobRequest lease;
  lease.set_worker_id(worker_);
  lease.set_worker_secret(testing::SecretOf(worker_));
  lease.add_free_devices("cpu:0");
  v1::LeaseJobResponse leased;
  for (int i = 0; i < 100; ++i) {
    leased.Clear();
    grpc::Status s = workers_->LeaseJob(Ctx().get(), lease, &leased);
    ASSERT_TRUE(s.ok()) << s.error_message();
    if (!leased.has_job()) break;
    EXPECT_EQ(leased.queued_waiting(), 0);
  }
  ASSERT_FALSE(leased.has_job());
  EXPECT_EQ(leased.queued_waiting(), 1);
  EXPECT_THAT(Rows("SELECT state FROM cells WHERE state <> 'running'"), ElementsAre("backoff"));

  v1::CancelCellsRequest cancel;
  cancel.set_study("small");
  v1::CancelCellsResponse cancelled;
  ASSERT_TRUE(studies_->CancelCells(Ctx().get(), cancel, &cancelled).ok());
  leased.Clear();
  ASSERT_TRUE(workers_->LeaseJob(Ctx().get(), lease, &leased).ok());
  EXPECT_FALSE(leased.has_job());
  EXPECT_EQ(leased.queued_waiting(), 0);
}

TEST_F(WorkerServiceTest, AWorkersSlurmJobIsListedAndABadOneRefused) {
  v1::RegisterWorkerRequest reg;
  reg.set_host("node-1");
  reg.add_devices("cuda:0");
  reg.set_slurm_job("1234_5");
  v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(workers_->RegisterWorker(Ctx().get(), reg, &registered).ok());
  testing::Remember(registered);
  v1::ListWorkersResponse list;
  ASSERT_TRUE(studies_->ListWorkers(Ctx().get(), v1::ListWorkersRequest(), &list).ok());
  std::map<std::string, std::string> jobs;
  for (const v1::Worker& w : list.workers()) jobs[w.id()] = w.slurm_job();
  EXPECT_EQ(jobs, (std::map<std::string, std::string>{{worker_, ""},
                                                      {registered.worker_id(), "1234_5"}}));

  reg.set_slurm_job("1234\x1b[2J");
  grpc::Status s = workers_->RegisterWorker(Ctx().get(), reg, &registered);
  testing::Remember(registered);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("slurm_job: byte 5 (0x1b)"));
}

}  // namespace
}  // namespace onset::coordinator

namespace onset::coordinator {
namespace {

ClaimedJob BranchJob() {
  ClaimedJob job;
  job.lease_id = "lease";
  job.study = "wsd";
  job.cell_id = "b1";
  job.attempt = 1;
  job.config_json = "{}";
  job.tokens_budget = 125;
  job.devices = {"cpu:0"};
  job.role = CellRole::kBranch;
  job.trunk_id = "t1";
  job.branch_tokens = 100;
  job.trunk_attempt = 2;  // the trunk attempt that recorded the checkpoint at 100 tokens
  return job;
}

TEST(JobToProtoTest, ABranchStartsFromItsTrunksCheckpointFileUnderTheRoot) {
  v1::Job out;
  JobToProto(BranchJob(), "/shared/ckpt", &out);
  EXPECT_EQ(out.cell_id(), "b1");
  EXPECT_EQ(out.tokens_budget(), 125);
  EXPECT_EQ(out.checkpoint_dir(), "/shared/ckpt/wsd/b1/attempt-1");
  EXPECT_EQ(out.trunk_checkpoint(), "/shared/ckpt/wsd/t1/attempt-2/ckpt-000000000100.pt");
  // A trunk checkpoint recorded before attempts had directories of their own is the trunk's.
  ClaimedJob legacy = BranchJob();
  legacy.trunk_own_dir = false;
  out.Clear();
  JobToProto(legacy, "/shared/ckpt", &out);
  EXPECT_EQ(out.trunk_checkpoint(), "/shared/ckpt/wsd/t1/ckpt-000000000100.pt");
}

// Every attempt writes into a directory of its own and resumes only what its lineage recorded,
// the newest first, each named by the attempt that wrote it.
TEST(JobToProtoTest, AnAttemptWritesItsOwnDirectoryAndResumesTheNamedCheckpoints) {
  ClaimedJob job = BranchJob();
  job.role = CellRole::kCell;
  job.attempt = 4;
  job.resume_from = {{3, 2000, true}, {1, 1000, false}};
  v1::Job out;
  JobToProto(job, "/shared/ckpt", &out);
  EXPECT_EQ(out.checkpoint_dir(), "/shared/ckpt/wsd/b1/attempt-4");
  ASSERT_EQ(out.resume_from_size(), 2);
  EXPECT_EQ(out.resume_from(0).path(), "/shared/ckpt/wsd/b1/attempt-3/ckpt-000000002000.pt");
  EXPECT_EQ(out.resume_from(0).attempt(), 3);
  EXPECT_EQ(out.resume_from(0).tokens(), 2000);
  EXPECT_EQ(out.resume_from(1).path(), "/shared/ckpt/wsd/b1/ckpt-000000001000.pt");
  EXPECT_FALSE(out.resume_from(1).own_dir());
  // Without a root the worker finds them in its work directory: no paths.
  out.Clear();
  JobToProto(job, "", &out);
  EXPECT_EQ(out.checkpoint_dir(), "");
  EXPECT_EQ(out.resume_from(0).path(), "");
  EXPECT_EQ(out.resume_from(0).attempt(), 3);
}

TEST(JobToProtoTest, WithoutACheckpointRootABranchNamesNoTrunkCheckpoint) {
  v1::Job out;
  JobToProto(BranchJob(), "", &out);
  EXPECT_EQ(out.checkpoint_dir(), "");
  EXPECT_EQ(out.trunk_checkpoint(), "");
}

TEST(JobToProtoTest, OtherCellsNameNoTrunkCheckpoint) {
  for (CellRole role : {CellRole::kCell, CellRole::kTrunk}) {
    ClaimedJob job = BranchJob();
    job.role = role;
    v1::Job out;
    JobToProto(job, "/shared/ckpt", &out);
    EXPECT_EQ(out.checkpoint_dir(), "/shared/ckpt/wsd/b1/attempt-1");
    EXPECT_EQ(out.trunk_checkpoint(), "") << wire::RoleName(role);
  }
}

}  // namespace
}  // namespace onset::coordinator
