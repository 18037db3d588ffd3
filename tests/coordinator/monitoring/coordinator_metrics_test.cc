#include "coordinator/monitoring/coordinator_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "common/fake_clock.h"
#include "onset/v1/onset.pb.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testutil::TempDir;

class CoordinatorMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
    absl::StatusOr<StudyDetail> detail = store_->GetStudy("small");
    ASSERT_TRUE(detail.ok()) << detail.status();
    cells_ = static_cast<int>(detail->cells.size());
  }

  MetricsSources Sources(int max_studies = 50) {
    MetricsSources s;
    s.studies = store_.get();
    s.workers = store_.get();
    s.open_leases = [] { return int64_t{3}; };
    s.expired_leases = [] { return int64_t{7}; };
    s.writer = [this] { return store_->WriterStats(); };
    s.rpcs = &rpcs_;
    s.db_path = dir_.File("onset.db");
    s.clock = &clock_;
    s.live_window = std::chrono::minutes(10);
    s.max_studies = max_studies;
    s.version = "9.9.9";
    return s;
  }

  void AddStudy(const std::string& name) {
    std::string text = testing::kSmallStudy;
    text.replace(text.find("name: small"), 11, "name: " + name);
    absl::StatusOr<StudySpec> spec = ParseStudyFile(name + ".yaml", text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_TRUE(
        store_->AddStudy({spec->name, "", name + ".yaml", spec->source_yaml, spec->cells}).ok());
  }

  static std::string Line(const std::string& sample, double value) {
    return sample + " " + std::to_string(static_cast<int64_t>(value)) + "\n";
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::string worker_;
  std::unique_ptr<SqliteStore> store_;
  RpcMetrics rpcs_{{onset::v1::Study::descriptor()->file()->FindServiceByName("WorkerService")}};
  int cells_ = 0;
};

TEST_F(CoordinatorMetricsTest, CellsByStateWorkersLeasesAndTheDatabase) {
  ASSERT_GT(cells_, 1);
  absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
  ASSERT_TRUE(job.ok() && job->has_value());
  rpcs_.Record("/onset.v1.WorkerService/Heartbeat", 0, 0.002);
  rpcs_.Record("/onset.v1.WorkerService/Heartbeat", 9, 0.2);
  CoordinatorMetrics metrics(Sources());
  const std::string page = metrics.Render();

  EXPECT_THAT(page, HasSubstr("onset_build_info{version=\"9.9.9\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("onset_studies 1\n"));
  EXPECT_THAT(page, HasSubstr(Line("onset_cells{study=\"small\",state=\"queued\"}", cells_ - 1)));
  EXPECT_THAT(page, HasSubstr("onset_cells{study=\"small\",state=\"running\"} 1\n"));
  // Every state, zeros included, so that a rule on one never sees a missing series.
  EXPECT_THAT(page, HasSubstr("onset_cells{study=\"small\",state=\"diverged\"} 0\n"));
  EXPECT_THAT(page, Not(HasSubstr("{study=\"_other\"")));
  EXPECT_THAT(page, HasSubstr("onset_workers_live 1\n"));
  EXPECT_THAT(page, HasSubstr("onset_workers_registered 1\n"));
  EXPECT_THAT(page, HasSubstr("onset_store_read_ok 1\n"));
  EXPECT_THAT(page, HasSubstr("onset_leases_open 3\n"));
  EXPECT_THAT(page, HasSubstr("# TYPE onset_lease_expiries_total counter\n"
                              "onset_lease_expiries_total 7\n"));
  EXPECT_THAT(page, HasSubstr("onset_rpc_calls_total{service=\"onset.v1.WorkerService\","
                              "method=\"Heartbeat\",code=\"OK\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("onset_rpc_calls_total{service=\"onset.v1.WorkerService\","
                              "method=\"Heartbeat\",code=\"FAILED_PRECONDITION\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("onset_rpc_duration_seconds_bucket{service=\"onset.v1."
                              "WorkerService\",method=\"Heartbeat\",le=\"0.0025\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("onset_rpc_duration_seconds_count{service=\"onset.v1."
                              "WorkerService\",method=\"Heartbeat\"} 2\n"));
  EXPECT_THAT(page, HasSubstr("onset_db_write_queue_depth 0\n"));
  EXPECT_THAT(page, HasSubstr("# TYPE onset_db_write_batch_duration_seconds histogram\n"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(page, m, std::regex("onset_db_commits_total (\\d+)\n")));
  EXPECT_GE(std::stoll(m[1]), 3);  // the study, the worker, the claim
  ASSERT_TRUE(std::regex_search(page, m, std::regex("onset_db_size_bytes (\\d+)\n")));
  EXPECT_GT(std::stoll(m[1]), 0);
  EXPECT_THAT(page, HasSubstr("onset_db_wal_size_bytes "));
  ASSERT_TRUE(std::regex_search(page, m, std::regex("onset_disk_free_bytes (\\d+)\n")));
  EXPECT_GT(std::stoll(m[1]), 0);

  // Past the live window the worker no longer counts as live; it is still registered.
  clock_.Advance(std::chrono::minutes(11));
  const std::string later = metrics.Render();
  EXPECT_THAT(later, HasSubstr("onset_workers_live 0\n"));
  EXPECT_THAT(later, HasSubstr("onset_workers_registered 1\n"));
  EXPECT_THAT(later, HasSubstr("onset_uptime_seconds 660\n"));
}

TEST_F(CoordinatorMetricsTest, PastTheBoundTheOtherStudiesAreSummed) {
  AddStudy("second");
  AddStudy("third");
  // Every cell of "small" cancelled: the two others are active, so they are labelled first.
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("small");
  ASSERT_TRUE(detail.ok());
  std::vector<std::string> ids;
  for (const CellInfo& c : detail->cells) ids.push_back(c.id);
  ASSERT_TRUE(store_->CancelCells("small", ids).ok());

  const std::string page = CoordinatorMetrics(Sources(/*max_studies=*/1)).Render();
  EXPECT_THAT(page, HasSubstr("onset_studies 3\n"));
  EXPECT_THAT(page, HasSubstr(Line("onset_cells{study=\"second\",state=\"queued\"}", cells_)));
  EXPECT_THAT(page, Not(HasSubstr("study=\"third\"")));
  EXPECT_THAT(page, Not(HasSubstr("study=\"small\"")));
  EXPECT_THAT(page, HasSubstr(Line("onset_cells{study=\"_other\",state=\"queued\"}", cells_)));
  EXPECT_THAT(page, HasSubstr(Line("onset_cells{study=\"_other\",state=\"cancelled\"}", cells_)));

  // With room for two: both active studies, the cancelled one summed.
  const std::string two = CoordinatorMetrics(Sources(2)).Render();
  EXPECT_THAT(two, HasSubstr("study=\"third\""));
  EXPECT_THAT(two, HasSubstr(Line("onset_cells{study=\"_other\",state=\"cancelled\"}", cells_)));
  EXPECT_THAT(two, HasSubstr("onset_cells{study=\"_other\",state=\"queued\"} 0\n"));
}

TEST_F(CoordinatorMetricsTest, WebhookCountsOnlyWhenWebhooksAreConfigured) {
  EXPECT_THAT(CoordinatorMetrics(Sources()).Render(), Not(HasSubstr("onset_notification")));
  MetricsSources sources = Sources();
  sources.notifications = [] { return NotificationCounts{5, 4, 3, 2}; };
  const std::string page = CoordinatorMetrics(sources).Render();
  EXPECT_THAT(page, HasSubstr("onset_notifications_sent_total 5\n"));
  EXPECT_THAT(page, HasSubstr("onset_notification_failures_total 4\n"));
  EXPECT_THAT(page, HasSubstr("onset_notifications_dropped_total 3\n"));
  EXPECT_THAT(page, HasSubstr("onset_notifications_queued 2\n"));
}

TEST_F(CoordinatorMetricsTest, AnInMemoryDatabaseHasNoFileFamilies) {
  MetricsSources sources = Sources();
  sources.db_path = ":memory:";
  const std::string page = CoordinatorMetrics(sources).Render();
  EXPECT_THAT(page, Not(HasSubstr("onset_db_size_bytes")));
  EXPECT_THAT(page, Not(HasSubstr("onset_disk_free_bytes")));
  EXPECT_THAT(page, HasSubstr("onset_db_commits_total"));
}

}  // namespace
}  // namespace onset::coordinator
