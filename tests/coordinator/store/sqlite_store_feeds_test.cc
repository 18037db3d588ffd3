// The event log behind `onset watch` and the trainers' logs behind `onset logs`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cmath>
#include <functional>

#include "common/fake_clock.h"
#include "common/log_line.h"
#include "common/utf8.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testutil::TempDir;

class FeedsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
  }

  ClaimedJob Claim() {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    EXPECT_TRUE(job.ok() && job->has_value());
    return job.ok() && job->has_value() ? **job : ClaimedJob{};
  }

  std::vector<CellEvent> Events(int64_t after) {
    absl::StatusOr<std::vector<CellEvent>> events = store_->StudyEvents("small", after, 1000);
    EXPECT_TRUE(events.ok()) << events.status();
    return events.ok() ? *events : std::vector<CellEvent>{};
  }

  // Runs `sql` on the database file beside the store, as another process would.
  void RawSql(const std::string& sql, const std::function<void(sqlite3_stmt*)>& row = nullptr) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir_.File("onset.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      if (row) row(stmt);
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::string worker_;
};

std::string Describe(const CellEvent& e) {
  return (e.from ? CellStateName(*e.from) : std::string("-")) + ">" + CellStateName(e.to) + "#" +
         std::to_string(e.attempt);
}

TEST_F(FeedsTest, EveryStateChangeIsAnEventInOrder) {
  std::vector<CellEvent> added = Events(0);
  ASSERT_EQ(added.size(), 6u);
  for (const CellEvent& e : added) EXPECT_EQ(Describe(e), "->queued#0");
  const int64_t after_add = added.back().seq;

  ClaimedJob job = Claim();
  AttemptEnd crash{AttemptOutcome::kFailed, 1, 0, "exit code 1", "Traceback"};
  ASSERT_TRUE(store_->FinishAttempt(job.lease_id, crash).ok());
  ASSERT_TRUE(store_->CancelCells("small", {job.cell_id}).ok());
  RerunRequest rerun;
  rerun.study = "small";
  rerun.cell_ids = {job.cell_id};
  ASSERT_TRUE(store_->RerunCells(rerun).ok());

  std::vector<CellEvent> events = Events(after_add);
  std::vector<std::string> described;
  for (const CellEvent& e : events) {
    EXPECT_EQ(e.cell_id, job.cell_id);
    described.push_back(Describe(e));
  }
  EXPECT_THAT(described, ElementsAre("queued>running#1", "running>backoff#1", "backoff>cancelled#1",
                                     "cancelled>queued#1"));
  EXPECT_EQ(events[0].worker_id, worker_);
  EXPECT_THAT(events[1].reason, HasSubstr("exit code 1"));
  EXPECT_EQ(events[0].axes.at("arch"), "full");
  EXPECT_LT(events[0].seq, events[1].seq);

  // Resuming after any event gives exactly the ones after it.
  std::vector<CellEvent> tail = Events(events[1].seq);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0].seq, events[2].seq);
  EXPECT_TRUE(Events(events.back().seq).empty());
}

TEST_F(FeedsTest, ASnapshotNamesTheLastEventItReflects) {
  ClaimedJob job = Claim();
  absl::StatusOr<StudySnapshot> snapshot = store_->SnapshotStudy("small");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->detail.cells.size(), 6u);
  EXPECT_EQ(snapshot->detail.study.cells_by_state.at("running"), 1);
  EXPECT_TRUE(Events(snapshot->last_seq).empty());
  ASSERT_TRUE(store_->FinishAttempt(job.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  std::vector<CellEvent> after = Events(snapshot->last_seq);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(Describe(after[0]), "running>succeeded#1");
  EXPECT_TRUE(absl::IsNotFound(store_->SnapshotStudy("nope").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->StudyEvents("nope", 0, 10).status()));
}

TEST_F(FeedsTest, WaitForChangeWakesOnAWriteAndTimesOutOtherwise) {
  const int64_t version = store_->ChangeVersion();
  EXPECT_EQ(store_->WaitForChange(version, 10), version);
  Claim();
  EXPECT_GT(store_->WaitForChange(version, 10'000), version);
}

TEST_F(FeedsTest, LogsAreReadByCellPrefixAndAttempt) {
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, {{1, 10, "step 1"}, {2, 11, "step 2"}}).ok());
  // A re-sent line replaces itself.
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, {{2, 12, "step 2"}, {3, 13, "step 3"}}).ok());

  LogQuery query;
  query.cell = job.cell_id.substr(0, 6);
  absl::StatusOr<LogChunk> chunk = store_->ReadLogs(query);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_EQ(chunk->study, "small");
  EXPECT_EQ(chunk->cell_id, job.cell_id);
  EXPECT_EQ(chunk->attempt, 1);
  EXPECT_FALSE(chunk->ended);
  EXPECT_EQ(chunk->worker_id, worker_);
  ASSERT_EQ(chunk->lines.size(), 3u);
  EXPECT_EQ(chunk->lines[2].text, "step 3");
  EXPECT_EQ(chunk->first_line, 1);

  query.after_line = 2;
  chunk = store_->ReadLogs(query);
  ASSERT_TRUE(chunk.ok());
  ASSERT_EQ(chunk->lines.size(), 1u);
  EXPECT_EQ(chunk->lines[0].line, 3);

  ASSERT_TRUE(store_->FinishAttempt(job.lease_id, {AttemptOutcome::kFailed, 1, 0, "x", ""}).ok());
  EXPECT_TRUE(
      absl::IsFailedPrecondition(store_->AppendLogs(job.lease_id, {{4, 1, "late"}}).status()));
  chunk = store_->ReadLogs(query);
  ASSERT_TRUE(chunk.ok());
  EXPECT_TRUE(chunk->ended);

  query.attempt = 2;
  EXPECT_TRUE(absl::IsNotFound(store_->ReadLogs(query).status()));
}

TEST_F(FeedsTest, ABadOrAmbiguousCellNameIsRefused) {
  LogQuery query;
  query.cell = "zz";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ReadLogs(query).status()));
  query.cell = "0000000000000000";
  EXPECT_TRUE(absl::IsNotFound(store_->ReadLogs(query).status()));
  query.cell = "%%%%";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ReadLogs(query).status()));

  // The same cells in a second study: an id alone no longer names one cell.
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", testing::kSmallStudy);
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(store_->AddStudy({"copy", "", "s.yaml", spec->source_yaml, spec->cells}).ok());
  query.cell = spec->cells[0].id;
  absl::Status ambiguous = store_->ReadLogs(query).status();
  EXPECT_TRUE(absl::IsInvalidArgument(ambiguous)) << ambiguous;
  EXPECT_THAT(ambiguous.message(), HasSubstr("small/" + spec->cells[0].id));
  EXPECT_THAT(ambiguous.message(), HasSubstr("copy/" + spec->cells[0].id));
  query.study = "copy";
  absl::StatusOr<LogChunk> chunk = store_->ReadLogs(query);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_EQ(chunk->attempt, 0);  // never ran
  EXPECT_TRUE(chunk->lines.empty());
}

TEST_F(FeedsTest, OnlyTheNewestLinesOfAnAttemptAreKept) {
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, {{1, 0, "a"}, {2, 0, "b"}, {3, 0, "c"}}).ok());
  const int64_t last = kMaxLogLinesPerAttempt + 2;
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, {{last, 0, "z"}}).ok());
  LogQuery query;
  query.cell = job.cell_id;
  absl::StatusOr<LogChunk> chunk = store_->ReadLogs(query);
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->first_line, 3);
  ASSERT_EQ(chunk->lines.size(), 2u);
  EXPECT_EQ(chunk->lines[0].text, "c");
}

TEST_F(FeedsTest, ALongLineIsCutBetweenCharactersAndSaysSo) {
  ClaimedJob job = Claim();
  std::string line;
  while (line.size() < 9000) line += "\xE2\x82\xAC";  // 3-byte characters past the 8 KiB cut
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, {{1, 0, line}}).ok());
  LogQuery query;
  query.cell = job.cell_id;
  absl::StatusOr<LogChunk> chunk = store_->ReadLogs(query);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  ASSERT_EQ(chunk->lines.size(), 1u);
  const std::string& text = chunk->lines[0].text;
  EXPECT_LE(text.size(), common::kMaxLogLineBytes);
  EXPECT_TRUE(common::IsValidUtf8(text));
  EXPECT_THAT(text, ::testing::EndsWith("[... cut: the line had 9000 bytes]"));
  // As stored, not only as read.
  std::string stored;
  RawSql("SELECT text FROM log_lines", [&](sqlite3_stmt* row) {
    stored.assign(reinterpret_cast<const char*>(sqlite3_column_blob(row, 0)),
                  sqlite3_column_bytes(row, 0));
  });
  EXPECT_EQ(stored, text);
}

TEST_F(FeedsTest, AChunkOfLongLinesIsBoundedInBytesAndTheRestFollows) {
  ClaimedJob job = Claim();
  std::vector<LogLine> lines;
  for (int64_t i = 1; i <= 300; ++i) lines.push_back({i, 0, std::string(8000, 'a')});
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, lines).ok());
  LogQuery query;
  query.cell = job.cell_id;
  query.limit = 1000;
  int64_t read = 0;
  int chunks = 0;
  while (true) {
    absl::StatusOr<LogChunk> chunk = store_->ReadLogs(query);
    ASSERT_TRUE(chunk.ok()) << chunk.status();
    if (chunk->lines.empty()) break;
    ++chunks;
    size_t bytes = 0;
    for (const LogLine& line : chunk->lines) {
      EXPECT_EQ(line.line, ++read);
      bytes += line.text.size();
    }
    EXPECT_LE(bytes, size_t{1} << 20);
    query.after_line = chunk->lines.back().line;
  }
  EXPECT_EQ(read, 300);
  EXPECT_EQ(chunks, 3);
}

TEST_F(FeedsTest, LinesStoredWithBrokenUtf8AreReadBackRepaired) {
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->AppendLogs(job.lease_id, {{1, 0, "fine"}, {2, 0, "to be broken"}}).ok());
  // What older coordinators stored: a line cut inside a character, a raw invalid byte.
  RawSql("UPDATE log_lines SET text = CAST(X'616263E282' AS TEXT) WHERE line = 2");
  LogQuery query;
  query.cell = job.cell_id;
  absl::StatusOr<LogChunk> chunk = store_->ReadLogs(query);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  ASSERT_EQ(chunk->lines.size(), 2u);
  EXPECT_EQ(chunk->lines[0].text, "fine");
  EXPECT_EQ(chunk->lines[1].text, "abc\xEF\xBF\xBD");
}

TEST_F(FeedsTest, MetricNamesCountTheCellsThatReportedEach) {
  ClaimedJob a = Claim(), b = Claim();
  ASSERT_TRUE(
      store_->AddMetrics(a.lease_id, {{"train/loss", 100, 3.0}, {"train/loss", 200, 2.0}}).ok());
  ASSERT_TRUE(
      store_->AddMetrics(b.lease_id, {{"train/loss", 100, 3.1}, {"niah/acc", 100, 0.5}}).ok());
  absl::StatusOr<std::vector<std::pair<std::string, int>>> names = store_->MetricNames("small");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre(std::pair<std::string, int>{"niah/acc", 1},
                                  std::pair<std::string, int>{"train/loss", 2}));
  EXPECT_TRUE(absl::IsNotFound(store_->MetricNames("nope").status()));
}

// A point keeps the wall time it was measured at; one re-sent with another time takes the new
// one (the upsert replaces the point); 0 is "not known" both ways.
TEST_F(FeedsTest, MetricPointsKeepTheWallTimeTheyWereMeasuredAt) {
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_
                  ->AddMetrics(job.lease_id, {{"train/loss", 100, 3.0, 1796558400123},
                                              {"train/loss", 200, 2.0, 0},
                                              {"niah/acc@64", 100, 0.25, 1796558400999}})
                  .ok());
  ASSERT_TRUE(store_->AddMetrics(job.lease_id, {{"niah/acc@64", 100, 0.25, 1796558401000}}).ok());
  std::vector<std::string> seen;
  ASSERT_TRUE(store_
                  ->ForEachMetricPoint("small", {}, {},
                                       [&](const std::string&, const std::string& metric,
                                           int64_t tokens, double, int64_t at_unix_ms) {
                                         seen.push_back(metric + "@" + std::to_string(tokens) +
                                                        " at " + std::to_string(at_unix_ms));
                                         return true;
                                       })
                  .ok());
  EXPECT_THAT(seen, ElementsAre("niah/acc@64@100 at 1796558401000",
                                "train/loss@100 at 1796558400123", "train/loss@200 at 0"));
}

TEST_F(FeedsTest, MetricPointsComeOrderedAndFilteredInOneSnapshot) {
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_
                  ->AddMetrics(job.lease_id, {{"train/loss", 200, 2.0},
                                              {"train/loss", 100, 3.0},
                                              {"niah/acc@64", 100, 0.25},
                                              {"eval/heldout_loss", 100, std::nan("")}})
                  .ok());
  std::vector<std::string> seen;
  ASSERT_TRUE(store_
                  ->ForEachMetricPoint("small", {}, {},
                                       [&](const std::string& cell, const std::string& metric,
                                           int64_t tokens, double value, int64_t) {
                                         EXPECT_EQ(cell, job.cell_id);
                                         seen.push_back(metric + "@" + std::to_string(tokens) +
                                                        (std::isnan(value) ? "=nan" : ""));
                                         return true;
                                       })
                  .ok());
  EXPECT_THAT(seen, ElementsAre("eval/heldout_loss@100=nan", "niah/acc@64@100", "train/loss@100",
                                "train/loss@200"));
  seen.clear();
  ASSERT_TRUE(store_
                  ->ForEachMetricPoint("small", {"train/loss"}, {job.cell_id},
                                       [&](const std::string&, const std::string& metric,
                                           int64_t tokens, double, int64_t) {
                                         seen.push_back(metric + "@" + std::to_string(tokens));
                                         return seen.size() < 1;  // stop after the first
                                       })
                  .ok());
  EXPECT_THAT(seen, ElementsAre("train/loss@100"));
  EXPECT_TRUE(
      absl::IsNotFound(store_->ForEachMetricPoint("nope", {}, {}, [](auto&&...) { return true; })));
  EXPECT_TRUE(absl::IsNotFound(store_->ForEachMetricPoint("small", {}, {"0000000000000000"},
                                                          [](auto&&...) { return true; })));
}

// A client that stops reading a metrics stream holds the points it was sent, never a database
// reader: with one reader, the store still answers other reads while a ForEachMetricPoint
// caller sits on a point, and points written meanwhile neither repeat nor reorder the stream.
TEST_F(FeedsTest, MetricPointsAreReadInPagesAndNoReaderIsHeldWhileACallerWaits) {
  SqliteStore::Options options;
  options.readers = 1;
  absl::StatusOr<std::unique_ptr<SqliteStore>> one_reader =
      SqliteStore::OpenReadOnly(dir_.File("onset.db"), clock_, options);
  ASSERT_TRUE(one_reader.ok()) << one_reader.status();
  ClaimedJob job = Claim();
  constexpr int kPoints = 25'000;  // more than two pages
  std::vector<MetricPoint> points;
  // Within the cell's budget (64,000 tokens): points past it are refused.
  for (int i = 1; i <= kPoints; ++i) points.push_back({"train/loss", 2 * i, 1.0 / i});
  for (size_t from = 0; from < points.size(); from += 1000) {
    std::vector<MetricPoint> batch(points.begin() + from,
                                   points.begin() + std::min(points.size(), from + 1000));
    ASSERT_TRUE(store_->AddMetrics(job.lease_id, batch).ok());
  }
  int64_t last = 0;
  int seen = 0;
  bool other_reads_answered = true;
  ASSERT_TRUE((*one_reader)
                  ->ForEachMetricPoint(
                      "small", {"train/loss"}, {},
                      [&](const std::string&, const std::string&, int64_t tokens, double, int64_t) {
                        EXPECT_GT(tokens, last);
                        last = tokens;
                        if (++seen % 10'000 == 1) {
                          // The only reader is free: this read does not wait for the stream.
                          other_reads_answered =
                              other_reads_answered && (*one_reader)->ListStudies().ok();
                          // A point added behind the stream's position comes never; one ahead
                          // of it, added before the last page is read, comes once.
                          std::vector<MetricPoint> added = {{"train/loss", tokens - 1, 0.0}};
                          if (seen < 20'000)
                            added.push_back({"train/loss", 2 * kPoints + seen, 0.0});
                          EXPECT_TRUE(store_->AddMetrics(job.lease_id, added).ok());
                        }
                        return true;
                      })
                  .ok());
  EXPECT_TRUE(other_reads_answered);
  EXPECT_EQ(seen, kPoints + 2);  // the two points added ahead of the stream, once each
}

}  // namespace
}  // namespace onset::coordinator
