// SqliteStore opened read-only: it reads what a writer committed, follows a writer that starts
// while it is open, and writes nothing, neither rows nor the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/fake_clock.h"
#include "coordinator/store/feeds.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using testutil::TempDir;

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class ReadOnlyStoreTest : public ::testing::Test {
 protected:
  // kSmallStudy with one cell run to the end: metrics, logs and a succeeded attempt.
  void SetUp() override {
    path_ = dir_.File("onset.db");
    writer_ = testing::OpenSmallStudyStore(path_, clock_, &worker_);
    ASSERT_NE(writer_, nullptr);
    absl::StatusOr<std::optional<ClaimedJob>> job = writer_->ClaimNextCell(worker_, {"cpu:0"});
    ASSERT_TRUE(job.ok() && job->has_value());
    cell_ = (*job)->cell_id;
    ASSERT_TRUE(
        writer_->AddMetrics((*job)->lease_id, {{"train/loss", 512, 3.5}, {"train/loss", 1024, 2.5}})
            .ok());
    ASSERT_TRUE(writer_->AppendLogs((*job)->lease_id, {{1, 1, "step 1"}, {2, 2, "step 2"}}).ok());
    AttemptEnd done;
    done.outcome = AttemptOutcome::kSucceeded;
    done.exit_code = 0;
    ASSERT_TRUE(writer_->FinishAttempt((*job)->lease_id, done).ok());
  }

  std::unique_ptr<SqliteStore> OpenReader() {
    absl::StatusOr<std::unique_ptr<SqliteStore>> reader = SqliteStore::OpenReadOnly(path_, clock_);
    EXPECT_TRUE(reader.ok()) << reader.status();
    return reader.ok() ? *std::move(reader) : nullptr;
  }

  TempDir dir_;
  std::string path_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> writer_;
  std::string worker_;
  std::string cell_;
};

TEST_F(ReadOnlyStoreTest, ReadsWhatTheWriterCommitted) {
  std::unique_ptr<SqliteStore> reader = OpenReader();
  ASSERT_NE(reader, nullptr);

  absl::StatusOr<std::vector<StudyInfo>> studies = reader->ListStudies();
  ASSERT_TRUE(studies.ok()) << studies.status();
  ASSERT_EQ(studies->size(), 1u);
  EXPECT_EQ((*studies)[0].name, "small");
  EXPECT_EQ((*studies)[0].cells_total, 6);
  EXPECT_EQ((*studies)[0].cells_by_state.at("succeeded"), 1);
  EXPECT_EQ((*studies)[0].cells_by_state.at("queued"), 5);

  EXPECT_EQ(testing::FindCell(*reader, "small", cell_).state, CellState::kSucceeded);
  EXPECT_EQ(testing::FindCell(*reader, "small", cell_).attempts, 1);

  absl::StatusOr<std::vector<CellResult>> results = reader->Results("small");
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 6u);
  for (const CellResult& r : *results) {
    if (r.cell.id == cell_) {
      EXPECT_DOUBLE_EQ(r.final_metrics.at("train/loss"), 2.5);
    }
  }

  std::vector<std::pair<int64_t, double>> curve;
  ASSERT_TRUE(reader
                  ->ForEachMetricPoint("small", {"train/loss"}, {},
                                       [&](const std::string& cell, const std::string&,
                                           int64_t tokens, double value, int64_t) {
                                         EXPECT_EQ(cell, cell_);
                                         curve.emplace_back(tokens, value);
                                         return true;
                                       })
                  .ok());
  EXPECT_EQ(curve, (std::vector<std::pair<int64_t, double>>{{512, 3.5}, {1024, 2.5}}));

  LogQuery query;
  query.cell = cell_.substr(0, 8);
  absl::StatusOr<LogChunk> logs = reader->ReadLogs(query);
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_EQ(logs->cell_id, cell_);
  EXPECT_TRUE(logs->ended);
  ASSERT_EQ(logs->lines.size(), 2u);
  EXPECT_EQ(logs->lines[1].text, "step 2");

  absl::StatusOr<std::vector<WorkerInfo>> workers = reader->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  ASSERT_EQ(workers->size(), 1u);
  EXPECT_EQ((*workers)[0].id, worker_);

  EXPECT_EQ(reader->GetStudy("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ReadOnlyStoreTest, EveryWriteIsRefusedAndTheFileStaysAsItWas) {
  writer_.reset();  // as after `onset run` ended
  const std::string before = FileBytes(path_);
  ASSERT_FALSE(before.empty());
  std::unique_ptr<SqliteStore> reader = OpenReader();
  ASSERT_NE(reader, nullptr);

  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", testing::kSmallStudy);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const NewStudy study{"other", "", "s.yaml", spec->source_yaml, spec->cells};
  std::vector<absl::Status> writes = {
      reader->AddStudy(study).status(),
      reader->RegisterWorker({"h", 1, "v"}).status(),
      reader->ClaimNextCell(worker_, {"cpu:0"}).status(),
      reader->RecordProgress("lease", 1, 1).status(),
      reader->AddMetrics("lease", {{"x", 1, 1}}).status(),
      reader->FinishAttempt("lease", AttemptEnd{}),
      reader->ExpireAttempt("lease", "lost", 0),
      reader->CancelCells("small", {}).status(),
      reader->RerunCells(RerunRequest{"small", {CellState::kSucceeded}, {}, {}, true}).status(),
      reader->AppendLogs("lease", {{1, 1, "x"}}).status(),
      reader->ProbeWrite(),
  };
  for (const absl::Status& s : writes) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("read-only"));
  }
  ASSERT_TRUE(reader->ListStudies().ok());
  // A preview only reads: it works here, and writes nothing either.
  absl::StatusOr<AddStudyResult> preview = reader->PreviewStudy(study);
  ASSERT_TRUE(preview.ok()) << preview.status();
  EXPECT_EQ(preview->cells_added, static_cast<int>(spec->cells.size()));
  reader.reset();
  EXPECT_EQ(FileBytes(path_), before);
  EXPECT_EQ(SqliteStore::OpenReadOnly(":memory:", clock_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SqliteStore::OpenReadOnly(dir_.File("missing.db"), clock_).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("missing.db")));
}

// A coordinator that starts on the file while a reader has it open (an `onset run` started
// again while `onset status` reads): neither waits for the other, and the reader's change counter
// and watches follow the new commits.
TEST_F(ReadOnlyStoreTest, AWriterThatStartsWhileItIsOpenIsFollowed) {
  writer_.reset();
  std::unique_ptr<SqliteStore> reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  const int64_t version = reader->ChangeVersion();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(reader->WaitForChange(version, 150), version);  // nothing committed: times out
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));

  absl::StatusOr<std::unique_ptr<SqliteStore>> writer = SqliteStore::Open(path_, clock_);
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::StatusOr<int> cancelled = (*writer)->CancelCells("small", {});
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(*cancelled, 5);
  EXPECT_NE(reader->WaitForChange(version, 5000), version);
  absl::StatusOr<StudyDetail> detail = reader->GetStudy("small");
  ASSERT_TRUE(detail.ok()) << detail.status();
  int cancelled_seen = 0;
  for (const CellInfo& cell : detail->cells) cancelled_seen += cell.state == CellState::kCancelled;
  EXPECT_EQ(cancelled_seen, 5);

  // A watch over the reader sees a state change the writer makes after it started.
  std::vector<CellEvent> seen;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    RerunRequest rerun;
    rerun.study = "small";
    rerun.cell_ids = {cell_};
    rerun.states = {CellState::kSucceeded};
    EXPECT_TRUE((*writer)->RerunCells(rerun).ok());
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  absl::Status watched = WatchStudy(
      *reader, *reader, "small", 0,
      [&](const WatchUpdate& update) {
        for (const CellEvent& e : update.events) {
          if (e.cell_id == cell_ && e.to == CellState::kQueued) seen.push_back(e);
        }
        return seen.empty();
      },
      [&] { return std::chrono::steady_clock::now() > deadline; });
  later.join();
  EXPECT_TRUE(watched.ok()) << watched;
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].from, CellState::kSucceeded);
}

}  // namespace
}  // namespace onset::coordinator
