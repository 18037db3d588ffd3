#include "worker/job_reporter.h"

#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/fake_clock.h"
#include "tests/worker/fake_coordinator_client.h"

namespace onset::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// One train line with one point (train/loss) at `tokens`.
std::string TrainLine(int64_t tokens, double loss) {
  return absl::StrCat(R"({"event":"train","tokens":)", tokens, R"(,"metrics":{"train/loss":)", loss,
                      "}}");
}

class JobReporterTest : public ::testing::Test {
 protected:
  JobReporter Reporter(size_t flush_points = 3) {
    JobReporterOptions options;
    options.flush_points = flush_points;
    return JobReporter(options, "cell c attempt 1", "w1", "lease-1", &client_, clock_);
  }
  std::vector<size_t> BatchSizes() {
    std::vector<size_t> sizes;
    for (const auto& batch : client_.batches) sizes.push_back(batch.size());
    return sizes;
  }
  std::vector<std::string> LogTexts() {
    std::vector<std::string> texts;
    for (const LogLine& line : client_.log_lines) texts.push_back(line.text);
    return texts;
  }

  FakeCoordinatorClient client_;
  common::FakeClock clock_;
};

TEST_F(JobReporterTest, PointsGoInBatchesOfFlushPoints) {
  JobReporter reporter = Reporter(3);
  std::vector<std::string> lines;
  for (int i = 1; i <= 7; ++i) lines.push_back(TrainLine(i * 100, 4.0 - i * 0.1));
  reporter.TakeLines(&lines);
  EXPECT_THAT(lines, IsEmpty());
  EXPECT_THAT(BatchSizes(), ElementsAre(3, 3));  // each batch as soon as it is full
  EXPECT_EQ(reporter.pending_points(), 1u);
  reporter.FlushMetrics();
  EXPECT_THAT(BatchSizes(), ElementsAre(3, 3, 1));
  EXPECT_EQ(reporter.pending_points(), 0u);
}

TEST_F(JobReporterTest, PointsAFailedCallCarriedAreKeptForTheNextFlush) {
  client_.report_failures = 1;
  JobReporter reporter = Reporter(10);
  std::vector<std::string> lines = {TrainLine(100, 3.5), TrainLine(200, 3.0)};
  reporter.TakeLines(&lines);
  reporter.FlushMetrics();
  EXPECT_EQ(reporter.pending_points(), 2u);
  reporter.FlushMetrics();
  EXPECT_EQ(reporter.pending_points(), 0u);
  EXPECT_EQ(client_.batches.back(),
            (std::vector<MetricPoint>{{"train/loss", 100, 3.5}, {"train/loss", 200, 3.0}}));
  EXPECT_FALSE(reporter.lease_lost());
}

TEST_F(JobReporterTest, ARefusedBatchIsDroppedAndTheEndSaysSo) {
  client_.report_status = absl::InvalidArgumentError("bad points");
  JobReporter reporter = Reporter(10);
  std::vector<std::string> lines = {TrainLine(100, 3.5)};
  reporter.TakeLines(&lines);
  reporter.FlushMetrics();
  EXPECT_EQ(reporter.pending_points(), 0u);
  reporter.RelayTheRest();
  EXPECT_THAT(
      LogTexts(),
      ElementsAre("onset-worker: the coordinator refused 1 metric points: first: bad points"));
}

TEST_F(JobReporterTest, ALostLeaseEndsAllReporting) {
  client_.report_status = absl::FailedPreconditionError("ReportMetrics: lease expired");
  JobReporter reporter = Reporter(10);
  std::vector<std::string> lines = {TrainLine(100, 3.5), "not json"};
  reporter.TakeLines(&lines);
  reporter.logs()->Add("a trainer line", clock_.WallUnixMs());
  reporter.FlushMetrics();
  EXPECT_TRUE(reporter.lease_lost());
  reporter.FlushLogs();
  reporter.RelayTheRest();
  EXPECT_THAT(client_.log_lines, IsEmpty());
  EXPECT_THAT(BatchSizes(), ElementsAre(1));  // tried once, never again
  reporter.FlushMetrics();
  EXPECT_THAT(BatchSizes(), ElementsAre(1));
}

// Metric reports and log relays are calls of the lease like heartbeats: each is bounded by what
// is left of the lease, and once no heartbeat has renewed it in time none is made at all, so a
// partition that drops packets cannot hold the job (and its trainer) past the lease.
TEST_F(JobReporterTest, ReportsAndLogsAreBoundedByTheLeaseAndStopWhenItRunsOut) {
  JobReporterOptions options;
  options.flush_points = 10;
  options.lease_ttl = std::chrono::seconds(30);
  options.stop_margin = std::chrono::seconds(5);
  JobReporter reporter(options, "cell c attempt 1", "w1", "lease-1", &client_, clock_);
  std::vector<std::string> lines = {TrainLine(100, 3.5)};
  reporter.TakeLines(&lines);
  reporter.logs()->Add("first", clock_.WallUnixMs());
  clock_.Advance(std::chrono::seconds(10));
  reporter.FlushMetrics();
  reporter.FlushLogs();
  // 25 s after the lease began (30 s less the margin), 10 s of it gone.
  EXPECT_THAT(client_.report_timeouts, ElementsAre(std::chrono::seconds(15)));
  EXPECT_THAT(client_.log_timeouts, ElementsAre(std::chrono::seconds(15)));

  lines = {TrainLine(200, 3.4)};
  reporter.TakeLines(&lines);
  reporter.logs()->Add("second", clock_.WallUnixMs());
  clock_.Advance(std::chrono::seconds(15));  // the lease is now given up
  reporter.FlushMetrics();
  reporter.FlushLogs();
  reporter.RelayTheRest();
  EXPECT_TRUE(reporter.lease_lost());
  EXPECT_THAT(BatchSizes(), ElementsAre(1));
  EXPECT_THAT(LogTexts(), ElementsAre("first"));
}

TEST_F(JobReporterTest, HeartbeatsCarryProgressAndSayWhenTheCellWasCancelled) {
  JobReporter reporter = Reporter();
  std::vector<std::string> lines = {
      R"({"event":"train","tokens":300,"metrics":{"train/tokens_per_second":25}})"};
  reporter.TakeLines(&lines);
  EXPECT_FALSE(reporter.Heartbeat());
  ASSERT_EQ(client_.heartbeats.size(), 1u);
  EXPECT_EQ(client_.heartbeats[0].tokens_done, 300);
  EXPECT_EQ(client_.heartbeats[0].tokens_per_second, 25);
  client_.cancel_cells = true;
  EXPECT_TRUE(reporter.Heartbeat());
  client_.heartbeat_status = absl::FailedPreconditionError("Heartbeat: unknown lease");
  EXPECT_FALSE(reporter.Heartbeat());
  EXPECT_TRUE(reporter.lease_lost());
}

TEST_F(JobReporterTest, LogLinesAFailedCallCarriedAreSentLaterInOrder) {
  client_.logs_status = absl::UnavailableError("AppendLogs: connection refused");
  JobReporter reporter = Reporter();
  reporter.logs()->Add("first", clock_.WallUnixMs());
  reporter.logs()->Add("second", clock_.WallUnixMs());
  reporter.FlushLogs();
  EXPECT_THAT(client_.log_lines, IsEmpty());
  client_.logs_status = absl::OkStatus();
  reporter.FlushLogs();
  EXPECT_THAT(LogTexts(), ElementsAre("first", "second"));
}

TEST_F(JobReporterTest, TheEndSaysWhatBecameOfTheTrainersOutput) {
  JobReporter reporter = Reporter();
  std::vector<std::string> lines = {"not json", TrainLine(100, 3.5)};
  reporter.TakeLines(&lines);
  reporter.FlushMetrics();
  reporter.Note("a note of the worker's own");
  reporter.RelayTheRest();
  EXPECT_THAT(
      LogTexts(),
      ElementsAre("onset-worker: a note of the worker's own",
                  "onset-worker: skipped 1 metrics lines that were not onset-train's JSON"));
}

}  // namespace
}  // namespace onset::worker
