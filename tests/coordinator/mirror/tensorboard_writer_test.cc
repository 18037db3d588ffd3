// What the live TensorBoard writer leaves in its directory as a real store's cell gets points
// and ends: one run per cell with its text, hparams session and every point once, appended as
// points arrive; a new file with every point after a restart; nothing for a cell without points.
#include "coordinator/mirror/tensorboard_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/durable_file.h"
#include "common/fake_clock.h"
#include "common/tensorboard/cell_run.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/common/tensorboard/event_records.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

namespace fs = std::filesystem;
using tensorboard::Event;
using tensorboard::testing::ReadRecords;
using testutil::TempDir;

class TensorBoardWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    ASSERT_TRUE(job.ok() && job->has_value()) << job.status();
    job_ = **job;
  }

  void AddPoints(const std::vector<MetricPoint>& points) {
    absl::StatusOr<int> n = store_->AddMetrics(job_.lease_id, points);
    ASSERT_TRUE(n.ok()) << n.status();
  }

  // The run directory's event files, by name, each as its events.
  std::map<std::string, std::vector<Event>> Files() {
    std::map<std::string, std::vector<Event>> files;
    absl::StatusOr<CellOutputs> cell = store_->DescribeCell(job_.study, job_.cell_id);
    EXPECT_TRUE(cell.ok()) << cell.status();
    const fs::path run = fs::path(out_) / tensorboard::RunDirectory(cell->cell.axes, job_.cell_id);
    if (!fs::exists(run)) return files;
    for (const auto& entry : fs::directory_iterator(run)) {
      std::string bytes;
      EXPECT_FALSE(base::ReadFile(entry.path().string(), &bytes).has_value());
      files[entry.path().filename().string()] = ReadRecords(bytes);
    }
    return files;
  }

  // Every scalar in `events` as (tag, step, value).
  static std::vector<std::tuple<std::string, int64_t, float>> Scalars(
      const std::vector<Event>& events) {
    std::vector<std::tuple<std::string, int64_t, float>> scalars;
    for (const Event& e : events) {
      for (const auto& v : e.summary().value()) {
        if (v.metadata().plugin_data().plugin_name() == "scalars") {
          scalars.emplace_back(v.tag(), e.step(), v.tensor().float_val(0));
        }
      }
    }
    return scalars;
  }

  static std::vector<std::string> Tags(const std::vector<Event>& events) {
    std::vector<std::string> tags;
    for (const Event& e : events) {
      if (e.has_file_version()) tags.push_back("version");
      for (const auto& v : e.summary().value()) tags.push_back(v.tag());
    }
    return tags;
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::string worker_;
  std::unique_ptr<SqliteStore> store_;
  ClaimedJob job_;
  std::string out_ = dir_.File("tb");
};

TEST_F(TensorBoardWriterTest, ACellWithoutPointsHasNoRun) {
  TensorBoardWriter writer(out_, store_.get(), &clock_);
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(TensorBoardWriterTest, AppendsEachPointOnceAsItArrivesThenTheSessionsEnd) {
  TensorBoardWriter writer(out_, store_.get(), &clock_);
  AddPoints({{"train/loss", 512, 5.5, 1'796'000'000'000}, {"train/loss", 1024, 5.25, 0}});
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  auto files = Files();
  ASSERT_EQ(files.size(), 1u);
  const std::string name = files.begin()->first;
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_EQ(Tags(files.begin()->second),
            (std::vector<std::string>{"version", "cell", "_hparams_/session_start_info",
                                      "train/loss", "train/loss"}));
  // The point's own wall time (seconds), 0 where it is not known.
  EXPECT_EQ(files.begin()->second[3].wall_time(), 1'796'000'000.0);
  EXPECT_EQ(files.begin()->second[4].wall_time(), 0.0);

  // Nothing new: nothing written.
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  EXPECT_EQ(Files().begin()->second.size(), 5u);

  AddPoints({{"train/loss", 1536, 5.0, 0}, {"niah/acc", 1536, 0.25, 0}});
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  files = Files();
  ASSERT_EQ(files.size(), 1u);  // appended to the same file
  EXPECT_EQ(Scalars(files[name]),
            (std::vector<std::tuple<std::string, int64_t, float>>{{"train/loss", 512, 5.5f},
                                                                  {"train/loss", 1024, 5.25f},
                                                                  {"niah/acc", 1536, 0.25f},
                                                                  {"train/loss", 1536, 5.0f}}));

  ASSERT_TRUE(
      store_->FinishAttempt(job_.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());  // the end is written once
  const std::vector<Event> events = Files()[name];
  ASSERT_EQ(events.size(), 8u);
  ASSERT_EQ(events.back().summary().value(0).tag(), "_hparams_/session_end_info");
  tensorboard::HParamsPluginData end;
  ASSERT_TRUE(
      end.ParseFromString(events.back().summary().value(0).metadata().plugin_data().content()));
  EXPECT_EQ(end.session_end_info().status(), tensorboard::STATUS_SUCCESS);
}

TEST_F(TensorBoardWriterTest, AWriterOfALaterProcessStartsANewFileWithEveryPoint) {
  AddPoints({{"train/loss", 512, 5.5, 0}});
  {
    TensorBoardWriter writer(out_, store_.get(), &clock_);
    ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  }
  AddPoints({{"train/loss", 1024, 5.25, 0}});
  clock_.Advance(std::chrono::seconds(2));
  TensorBoardWriter restarted(out_, store_.get(), &clock_);
  ASSERT_TRUE(restarted.Sync(job_.study, job_.cell_id).ok());
  const auto files = Files();
  ASSERT_EQ(files.size(), 2u);
  // In name order, the later file last: it repeats every point, which TensorBoard shows once.
  EXPECT_EQ(Scalars(files.begin()->second).size(), 1u);
  EXPECT_EQ(Scalars(files.rbegin()->second),
            (std::vector<std::tuple<std::string, int64_t, float>>{{"train/loss", 512, 5.5f},
                                                                  {"train/loss", 1024, 5.25f}}));
}

TEST_F(TensorBoardWriterTest, AnUnknownCellIsNotFoundAndWritesNothing) {
  TensorBoardWriter writer(out_, store_.get(), &clock_);
  EXPECT_TRUE(absl::IsNotFound(writer.Sync(job_.study, "ffffffffffffffff")));
  EXPECT_TRUE(absl::IsNotFound(writer.Sync("nope", job_.cell_id)));
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(TensorBoardWriterTest, AFailedWriteIsTriedAgainWhole) {
  AddPoints({{"train/loss", 512, 5.5, 0}});
  // A file where the directory should be: nothing can be written under it.
  ASSERT_FALSE(base::TryWriteFileDurably(out_, "not a directory").has_value());
  TensorBoardWriter writer(out_, store_.get(), &clock_);
  absl::Status failed = writer.Sync(job_.study, job_.cell_id);
  EXPECT_TRUE(absl::IsFailedPrecondition(failed)) << failed;
  fs::remove(out_);
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  const auto files = Files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(
      Tags(files.begin()->second),
      (std::vector<std::string>{"version", "cell", "_hparams_/session_start_info", "train/loss"}));
}

}  // namespace
}  // namespace onset::coordinator
