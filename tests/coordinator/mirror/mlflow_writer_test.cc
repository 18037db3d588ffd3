// The MLflow writer against an in-memory tracking server that answers as MLflow's REST API does
// (the real server: tests/python/test_mlflow.py): a run per cell with its params, tags and every
// point once, found again by a writer that starts later, and nothing resent after a failure.
#include "coordinator/mirror/mlflow_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using nlohmann::json;
using testutil::TempDir;

// What a tracking server holds, and the calls it answers.
class FakeMlflow : public JsonHttp {
 public:
  struct Run {
    std::string experiment;
    std::map<std::string, std::string> tags, params;
    std::vector<json> metrics;  // every logged point
    std::string status = "RUNNING";
    int64_t end_time = 0;
  };

  absl::StatusOr<json> Call(const std::string& path, const json& body) override {
    calls.push_back(path.substr(0, path.find('?')));
    const std::string api = "/api/2.0/mlflow";
    if (path.rfind(api + "/experiments/get-by-name?experiment_name=", 0) == 0) {
      const std::string name = path.substr(path.find('=') + 1);
      for (const auto& [id, n] : experiments) {
        if (n == name) return json{{"experiment", {{"experiment_id", id}, {"name", n}}}};
      }
      return absl::NotFoundError("RESOURCE_DOES_NOT_EXIST");
    }
    if (path == api + "/experiments/create") {
      const std::string id = std::to_string(experiments.size() + 1);
      experiments[id] = body["name"];
      return json{{"experiment_id", id}};
    }
    if (path == api + "/runs/create") {
      const std::string id = "run" + std::to_string(runs.size() + 1);
      Run& run = runs[id];
      run.experiment = body["experiment_id"];
      for (const json& t : body["tags"]) run.tags[t["key"]] = t["value"];
      return json{{"run", {{"info", {{"run_id", id}}}}}};
    }
    if (path == api + "/runs/search") {
      const std::string filter = body["filter"];
      json found = json::array();
      for (const auto& [id, run] : runs) {
        const std::string cell =
            run.tags.count("onset.cell_id") ? run.tags.at("onset.cell_id") : "";
        if (run.experiment != body["experiment_ids"][0] ||
            filter != "tags.`onset.cell_id` = '" + cell + "'") {
          continue;
        }
        // The latest (largest step) point per key, as MLflow's run data holds them.
        std::map<std::string, json> latest;
        for (const json& m : run.metrics) {
          auto& l = latest[m["key"]];
          if (l.is_null() || m["step"].get<int64_t>() >= l["step"].get<int64_t>()) l = m;
        }
        json metrics = json::array();
        for (const auto& [k, m] : latest) metrics.push_back(m);
        json tags = json::array();
        for (const auto& [k, v] : run.tags) tags.push_back({{"key", k}, {"value", v}});
        found.push_back({{"info", {{"run_id", id}, {"status", run.status}}},
                         {"data", {{"metrics", metrics}, {"tags", tags}}}});
      }
      return json{{"runs", found}};
    }
    const std::string id = body.value("run_id", "");
    if (!runs.count(id)) return absl::NotFoundError("no run " + id);
    Run& run = runs[id];
    if (path == api + "/runs/log-batch") {
      for (const json& p : body.value("params", json::array())) {
        auto [it, added] = run.params.emplace(p["key"], p["value"]);
        if (!added && it->second != p["value"]) {
          return absl::FailedPreconditionError("INVALID_PARAMETER_VALUE: changing param");
        }
      }
      EXPECT_LE(body.value("metrics", json::array()).size(), 1000u);
      if (body.contains("metrics") && metric_batches_left >= 0 && metric_batches_left-- == 0) {
        return absl::UnavailableError("connection refused");
      }
      for (const json& m : body.value("metrics", json::array())) run.metrics.push_back(m);
      return json::object();
    }
    if (path == api + "/runs/set-tag") {
      run.tags[body["key"]] = body["value"];
      return json::object();
    }
    if (path == api + "/runs/update") {
      run.status = body["status"];
      run.end_time = body.value("end_time", int64_t{0});
      return json::object();
    }
    return absl::NotFoundError("no endpoint " + path);
  }

  std::map<std::string, std::string> experiments;  // id -> name
  std::map<std::string, Run> runs;
  std::vector<std::string> calls;
  int metric_batches_left = -1;  // batches of points taken before it fails (-1: never fails)
};

class MlflowWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    ASSERT_TRUE(job.ok() && job->has_value()) << job.status();
    job_ = **job;
  }

  void AddPoints(const std::vector<MetricPoint>& points) {
    ASSERT_TRUE(store_->AddMetrics(job_.lease_id, points).ok());
  }

  FakeMlflow::Run& OnlyRun() {
    EXPECT_EQ(server_.runs.size(), 1u);
    return server_.runs.begin()->second;
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::string worker_;
  std::unique_ptr<SqliteStore> store_;
  ClaimedJob job_;
  FakeMlflow server_;
};

TEST_F(MlflowWriterTest, ACellWithoutPointsHasNoRun) {
  MlflowWriter writer(store_.get(), &server_, &clock_);
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  EXPECT_TRUE(server_.calls.empty());
}

TEST_F(MlflowWriterTest, ACellIsARunOfItsStudysExperimentWithEveryPointOnce) {
  MlflowWriter writer(store_.get(), &server_, &clock_);
  AddPoints({{"train/loss", 512, 5.5, 1'796'000'000'000},
             {"niah/acc@64", 512, std::nan(""), 1'796'000'000'500}});
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  ASSERT_EQ(server_.experiments.size(), 1u);
  EXPECT_EQ(server_.experiments.begin()->second, "small");
  FakeMlflow::Run& run = OnlyRun();
  EXPECT_EQ(run.tags.at("onset.study"), "small");
  EXPECT_EQ(run.tags.at("onset.cell_id"), job_.cell_id);
  EXPECT_EQ(run.tags.at("onset.state"), "running");
  EXPECT_EQ(run.params.at("arch"),
            store_->DescribeCell("small", job_.cell_id)->cell.axes.at("arch"));
  EXPECT_EQ(run.params.at("config.model.d_model"), "32");
  ASSERT_EQ(run.metrics.size(), 2u);
  EXPECT_EQ(run.metrics[0], (json{{"key", "niah/acc_at_64"},
                                  {"value", "NaN"},
                                  {"timestamp", 1'796'000'000'500},
                                  {"step", 512}}));
  EXPECT_EQ(
      run.metrics[1],
      (json{
          {"key", "train/loss"}, {"value", 5.5}, {"timestamp", 1'796'000'000'000}, {"step", 512}}));
  EXPECT_EQ(run.status, "RUNNING");

  AddPoints({{"train/loss", 1024, 5.0, 0}});
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  ASSERT_EQ(run.metrics.size(), 3u);
  EXPECT_EQ(run.metrics[2]["step"], 1024);

  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(
      store_->FinishAttempt(job_.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  EXPECT_EQ(run.status, "FINISHED");
  EXPECT_EQ(run.end_time, clock_.WallUnixMs());
  EXPECT_EQ(run.tags.at("onset.state"), "succeeded");
  const size_t calls = server_.calls.size();
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());  // nothing new: no call
  EXPECT_EQ(server_.calls.size(), calls);
}

TEST_F(MlflowWriterTest, AWriterThatStartsLaterFindsTheRunAndSendsOnlyWhatItLacks) {
  AddPoints({{"train/loss", 512, 5.5, 0}, {"train/loss", 1024, 5.25, 0}});
  {
    MlflowWriter writer(store_.get(), &server_, &clock_);
    ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  }
  AddPoints({{"train/loss", 1536, 5.0, 0}});
  MlflowWriter restarted(store_.get(), &server_, &clock_);
  ASSERT_TRUE(restarted.Sync(job_.study, job_.cell_id).ok());
  FakeMlflow::Run& run = OnlyRun();  // found again, not made twice
  ASSERT_EQ(run.metrics.size(), 3u);
  EXPECT_EQ(run.metrics[2]["step"], 1536);
}

TEST_F(MlflowWriterTest, AfterAFailureNothingAcceptedIsSentAgain) {
  std::vector<MetricPoint> points;
  for (int i = 1; i <= 1500; ++i) points.push_back({"train/loss", 32 * i, 1.0 / i, 0});
  AddPoints(points);
  MlflowWriter writer(store_.get(), &server_, &clock_);
  // The first 1000 points are taken, then the server fails.
  server_.metric_batches_left = 1;
  absl::Status failed = writer.Sync(job_.study, job_.cell_id);
  EXPECT_TRUE(absl::IsUnavailable(failed)) << failed;
  EXPECT_EQ(OnlyRun().metrics.size(), 1000u);
  server_.metric_batches_left = -1;
  ASSERT_TRUE(writer.Sync(job_.study, job_.cell_id).ok());
  EXPECT_EQ(OnlyRun().metrics.size(), 1500u);  // the other 500, none twice
  EXPECT_EQ(OnlyRun().metrics.back()["step"], 32 * 1500);
}

TEST_F(MlflowWriterTest, AGoneCellIsNotFound) {
  MlflowWriter writer(store_.get(), &server_, &clock_);
  EXPECT_TRUE(absl::IsNotFound(writer.Sync(job_.study, "ffffffffffffffff")));
  EXPECT_TRUE(server_.calls.empty());
}

}  // namespace
}  // namespace onset::coordinator
