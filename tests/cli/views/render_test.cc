#include "cli/views/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

v1::Cell MakeCell(const std::string& id, v1::CellState state, const std::string& arch) {
  v1::Cell cell;
  cell.set_id(id);
  cell.set_study("demo");
  cell.set_state(state);
  (*cell.mutable_axes())["arch"] = arch;
  (*cell.mutable_axes())["window"] = arch == "full" ? "-" : "64";
  (*cell.mutable_axes())["pos"] = "rope";
  (*cell.mutable_axes())["tokens"] = "20000";
  (*cell.mutable_axes())["seed"] = "0";
  cell.set_tokens_budget(20000);
  return cell;
}

TEST(RenderTest, StudyListCountsStates) {
  v1::ListStudiesResponse list;
  v1::Study* s = list.add_studies();
  s->set_name("demo");
  s->set_source_name("studies/demo.yaml");
  s->set_cells_total(6);
  (*s->mutable_cells_by_state())["succeeded"] = 4;
  (*s->mutable_cells_by_state())["running"] = 1;
  (*s->mutable_cells_by_state())["backoff"] = 1;  // shown as queued here
  EXPECT_EQ(RenderStudyList(list),
            "STUDY  CELLS  QUEUED  RUNNING  SUCCEEDED  FAILED  DIVERGED  CANCELLED  SOURCE\n"
            "demo       6       1        1          4       0         0          0  "
            "studies/demo.yaml\n");
}

TEST(RenderTest, StudyListShowsTagsOnceAStudyHasThem) {
  v1::ListStudiesResponse list;
  v1::Study* tagged = list.add_studies();
  tagged->set_name("demo");
  tagged->set_source_name("demo.yaml");
  tagged->add_tags("ablation");
  tagged->add_tags("gpu");
  v1::Study* plain = list.add_studies();
  plain->set_name("other");
  plain->set_source_name("other.yaml");
  EXPECT_EQ(RenderStudyList(list),
            "STUDY  TAGS          CELLS  QUEUED  RUNNING  SUCCEEDED  FAILED  DIVERGED  CANCELLED  "
            "SOURCE\n"
            "demo   ablation,gpu      0       0        0          0       0         0          0  "
            "demo.yaml\n"
            "other  -                 0       0        0          0       0         0          0  "
            "other.yaml\n");
}

TEST(RenderTest, AStudyShowsItsDescriptionAndTagsUnderItsSummary) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  study.mutable_study()->set_description("FF vs LF, 3 seeds");
  study.mutable_study()->add_tags("ablation");
  study.mutable_study()->add_tags("gpu");
  const std::string text = RenderStudy(study);
  EXPECT_THAT(text, HasSubstr("demo: 0 cells\ndescription: FF vs LF, 3 seeds\ntags: ablation, "
                              "gpu\n"));
}

TEST(RenderTest, AnAlertStandsOnItsOwnLine) {
  v1::Study s;
  s.set_name("demo");
  s.set_cells_total(3);
  (*s.mutable_cells_by_state())["failed"] = 3;
  s.set_alert("3 attempts in a row (3 cells) failed alike: out of memory");
  EXPECT_EQ(
      StudySummary(s),
      "demo: 3 cells: 3 failed\n!! 3 attempts in a row (3 cells) failed alike: out of memory");
}

TEST(RenderTest, CellsNoWorkerCanRunAreNamedOnTheirOwnLine) {
  v1::Study s;
  s.set_name("demo");
  s.set_cells_total(2);
  (*s.mutable_cells_by_state())["queued"] = 2;
  s.set_waiting("2 queued cells need 4 devices; the largest registered worker has 2");
  EXPECT_EQ(StudySummary(s),
            "demo: 2 cells: 2 queued\n"
            "waiting: 2 queued cells need 4 devices; the largest registered worker has 2");
}

TEST(RenderTest, DevicesPerCellAreShownWhenSomeCellNeedsSeveral) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  *study.add_cells() = MakeCell("aaaa", v1::CELL_STATE_QUEUED, "swa");
  EXPECT_THAT(RenderStudy(study), Not(HasSubstr("DEVICES")));
  study.mutable_cells(0)->set_devices(1);
  EXPECT_THAT(RenderStudy(study), Not(HasSubstr("DEVICES")));
  *study.add_cells() = MakeCell("bbbb", v1::CELL_STATE_QUEUED, "full");
  study.mutable_cells(1)->set_devices(4);
  const std::string text = RenderStudy(study);
  EXPECT_THAT(text, HasSubstr("SEED  DEVICES  PROGRESS"));
  EXPECT_THAT(text, HasSubstr("aaaa  queued  swa   64      rope  20K     0           1  0/20K 0%"));
  EXPECT_THAT(text, HasSubstr("bbbb  queued  full  -       rope  20K     0           4  0/20K 0%"));
}

TEST(RenderTest, StudyShowsProgressLossAndError) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  study.mutable_study()->set_cells_total(2);
  (*study.mutable_study()->mutable_cells_by_state())["running"] = 1;
  (*study.mutable_study()->mutable_cells_by_state())["failed"] = 1;
  v1::Cell running = MakeCell("aaaa", v1::CELL_STATE_RUNNING, "swa");
  running.set_tokens_done(5000);
  running.set_latest_loss(3.14159);
  running.set_tokens_per_second(25000);
  running.set_attempts(1);
  v1::Cell failed = MakeCell("bbbb", v1::CELL_STATE_FAILED, "full");
  failed.set_attempts(2);
  failed.set_last_error("exit code 1: something went badly wrong in a way that takes many words");
  *study.add_cells() = running;
  *study.add_cells() = failed;

  std::string text = RenderStudy(study);
  EXPECT_THAT(text, HasSubstr("demo: 2 cells: 1 failed, 1 running\n"));
  EXPECT_THAT(text,
              HasSubstr("aaaa  running  swa   64      rope  20K     0     5K/20K 25%  3.142"));
  EXPECT_THAT(text, HasSubstr("25K"));
  EXPECT_THAT(text, HasSubstr("exit code 1: something went badly wrong in a ..."));
  // Every line has the header's column layout: the STATE column starts at the same offset.
  size_t header_state = text.find("STATE");
  size_t line_start = text.find("aaaa");
  size_t state = text.find("running", line_start);
  EXPECT_EQ(state - line_start, header_state - text.find("CELL"));
}

TEST(RenderTest, ResultColumnsAreSortedSensibly) {
  v1::GetResultsResponse results;
  v1::CellResult* r = results.add_results();
  *r->mutable_cell() = MakeCell("aaaa", v1::CELL_STATE_SUCCEEDED, "full");
  for (const char* name :
       {"niah/acc@512", "niah/acc", "train/lr", "eval/short_loss", "niah/acc@64", "train/loss",
        "eval/heldout_loss", "niah/acc@128", "train/tokens_per_second", "eval/niah_seconds",
        "rh/score/l0h1", "ablation/top_k/niah_acc", "rh/max_full", "rh/count_full"}) {
    (*r->mutable_final_metrics())[name] = 0.5;
  }
  EXPECT_THAT(ResultColumns(results),
              ElementsAre("train/loss", "eval/heldout_loss", "eval/short_loss", "niah/acc",
                          "niah/acc@64", "niah/acc@128", "niah/acc@512", "rh/count_full",
                          "rh/max_full", "ablation/top_k/niah_acc"));
}

// The table answers whether cells retrieve; breakdowns stay in JSON.
TEST(RenderTest, ResultColumnsLeaveTheBreakdownsToJson) {
  v1::GetResultsResponse results;
  v1::CellResult* r = results.add_results();
  *r->mutable_cell() = MakeCell("aaaa", v1::CELL_STATE_SUCCEEDED, "full");
  for (const char* name :
       {"niah/acc", "niah/acc@64", "niah/acc_beyond_window", "niah/acc_beyond_own_window",
        "niah/acc_depth@0.5", "niah/control/distractor_copy_rate",
        "niah/control/distractor_copy_rate@64", "niah/single/acc", "niah/single/acc@64",
        "rh/samples", "ablation/random_k/niah_acc_mean", "ablation/random_k/niah_acc_std",
        "ablation/random_k/draws"}) {
    (*r->mutable_final_metrics())[name] = 0.5;
  }
  EXPECT_THAT(ResultColumns(results),
              ElementsAre("niah/acc", "niah/acc@64", "niah/acc_beyond_window",
                          "niah/control/distractor_copy_rate", "niah/single/acc", "rh/samples",
                          "ablation/random_k/niah_acc_mean"));
}

TEST(RenderTest, ResultsTableHasAxesStateAndMetrics) {
  v1::GetResultsResponse results;
  v1::CellResult* a = results.add_results();
  *a->mutable_cell() = MakeCell("aaaa", v1::CELL_STATE_SUCCEEDED, "full");
  (*a->mutable_final_metrics())["train/loss"] = 2.5;
  (*a->mutable_final_metrics())["niah/acc"] = 0.25;
  v1::CellResult* b = results.add_results();
  *b->mutable_cell() = MakeCell("bbbb", v1::CELL_STATE_FAILED, "swa");
  (*b->mutable_final_metrics())["train/loss"] = 4.0;

  EXPECT_EQ(RenderResults(results),
            "CELL  ARCH  WINDOW  POS   TOKENS  SEED  STATE      train/loss  niah/acc\n"
            "aaaa  full  -       rope  20K     0     succeeded         2.5      0.25\n"
            "bbbb  swa   64      rope  20K     0     failed              4         -\n");
}

TEST(RenderTest, ResultsShowEachCellsParametersAndFlopsPerToken) {
  v1::GetResultsResponse results;
  v1::CellResult* a = results.add_results();
  *a->mutable_cell() = MakeCell("aaaa", v1::CELL_STATE_SUCCEEDED, "full");
  a->mutable_cell()->set_non_embedding_params(1'234'567);
  a->mutable_cell()->set_train_flops_per_token(8.5e6);
  (*a->mutable_final_metrics())["niah/acc"] = 0.25;
  v1::CellResult* b = results.add_results();
  *b->mutable_cell() = MakeCell("bbbb", v1::CELL_STATE_QUEUED, "swa");  // not sized

  EXPECT_EQ(RenderResults(results),
            "CELL  ARCH  WINDOW  POS   TOKENS  SEED  STATE      PARAMS  FLOPS/TOK  niah/acc\n"
            "aaaa  full  -       rope  20K     0     succeeded    1.2M       8.5M      0.25\n"
            "bbbb  swa   64      rope  20K     0     queued          -          -         -\n");
}

TEST(RenderTest, FieldsTheStudyVariesGetColumnsAfterTheNamedAxes) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("lr");
  v1::Cell a = MakeCell("aaaa", v1::CELL_STATE_QUEUED, "full");
  (*a.mutable_axes())["train.lr"] = "0.001";
  (*a.mutable_axes())["model.d_model"] = "128";
  v1::Cell b = MakeCell("bbbb", v1::CELL_STATE_QUEUED, "swa");
  (*b.mutable_axes())["train.lr"] = "0.003";
  *study.add_cells() = a;
  *study.add_cells() = b;
  EXPECT_THAT(ExtraAxes(study.cells()), ElementsAre("model.d_model", "train.lr"));
  const std::string text = RenderStudy(study);
  EXPECT_THAT(text, HasSubstr("SEED  model.d_model  train.lr  PROGRESS"));
  EXPECT_THAT(text, HasSubstr("0     128            0.001     0/20K 0%"));
  EXPECT_THAT(text, HasSubstr("0     -              0.003     0/20K 0%"));

  v1::GetResultsResponse results;
  *results.add_results()->mutable_cell() = a;
  EXPECT_EQ(RenderResults(results),
            "CELL  ARCH  WINDOW  POS   TOKENS  SEED  model.d_model  train.lr  STATE\n"
            "aaaa  full  -       rope  20K     0     128            0.001     queued\n");
}

TEST(RenderTest, SubmitPreviewMarksNewAndExistingCells) {
  v1::SubmitStudyResponse preview;
  preview.mutable_study()->set_name("demo");
  *preview.add_cells() = MakeCell("aaaa", v1::CELL_STATE_SUCCEEDED, "full");
  *preview.add_cells() = MakeCell("bbbb", v1::CELL_STATE_QUEUED, "swa");
  (*preview.mutable_cells(1)->mutable_axes())["train.lr"] = "0.001";
  preview.add_new_cell_ids("bbbb");
  preview.set_cells_added(1);
  preview.set_tokens_to_train(40000);
  preview.set_tokens_without_sharing(40000);
  EXPECT_EQ(RenderSubmitPreview(preview),
            "CELL  SUBMIT              ARCH  WINDOW  POS   TOKENS  SEED  train.lr\n"
            "aaaa  exists (succeeded)  full  -       rope  20K     0     -\n"
            "bbbb  new                 swa   64      rope  20K     0     0.001\n"
            "demo: 2 cells, 1 new; dry run, nothing written\n"
            "40K tokens to train\n");
}

TEST(RenderTest, ProgressLineNamesRunningCells) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  study.mutable_study()->set_cells_total(2);
  (*study.mutable_study()->mutable_cells_by_state())["running"] = 1;
  (*study.mutable_study()->mutable_cells_by_state())["queued"] = 1;
  v1::Cell running = MakeCell("0123456789abcdef", v1::CELL_STATE_RUNNING, "swa");
  running.set_tokens_done(10000);
  running.set_latest_loss(3.0);
  *study.add_cells() = running;
  *study.add_cells() = MakeCell("fedcba9876543210", v1::CELL_STATE_QUEUED, "full");
  EXPECT_EQ(ProgressLine(study), "demo: 2 cells: 1 running, 1 queued | 01234567 10K/20K loss 3");
}

}  // namespace
namespace {

TEST(RenderTest, StudyProgressSumsTokensThroughputAndEta) {
  v1::GetStudyResponse study;
  auto add = [&](v1::CellState state, int64_t done, double tps) {
    v1::Cell* c = study.add_cells();
    c->set_state(state);
    c->set_tokens_budget(1'000'000);
    c->set_tokens_done(done);
    c->set_tokens_per_second(tps);
  };
  add(v1::CELL_STATE_SUCCEEDED, 1'000'000, 0);
  add(v1::CELL_STATE_RUNNING, 400'000, 5'000);
  add(v1::CELL_STATE_QUEUED, 0, 0);
  add(v1::CELL_STATE_FAILED, 200'000, 0);  // ended: nothing left to train
  // Done 1M + 0.4M + 0 + 1M = 2.4M of 4M; 1.6M left at 5K tok/s = 320 s.
  EXPECT_EQ(StudyProgress(study), "tokens 2.4M/4M (60%), 5K tok/s, ETA 5m20s");
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(7500), "2h05m");
  EXPECT_EQ(FormatDuration(2 * 86400 + 3600), "2d01h");
  EXPECT_EQ(StudyProgress(v1::GetStudyResponse()), "");
}

}  // namespace
namespace {

TEST(RenderTest, WorkersShowJobsAndHeartbeatAge) {
  v1::ListWorkersResponse list;
  v1::Worker* w = list.add_workers();
  w->set_id("w-1");
  w->set_host("gpu-07");
  w->set_slots(4);
  w->set_version("0.1");
  w->set_last_seen_unix_ms(1'000'000);
  w->set_slurm_job("1234_5");
  for (const char* d : {"cuda:0", "cuda:1", "cuda:2", "cuda:3"}) w->add_devices(d);
  v1::Worker::Job* j = w->add_jobs();
  j->set_study("demo");
  j->set_cell_id("abcd");
  j->set_attempt(2);
  j->add_devices("cuda:0");
  j->add_devices("cuda:1");
  j = w->add_jobs();
  j->set_study("demo");
  j->set_cell_id("ef01");
  j->set_attempt(1);
  j->add_devices("cuda:3");
  v1::Worker* old = list.add_workers();  // registered without device names
  old->set_id("w-2");
  old->set_host("cpu-01");
  old->set_slots(2);
  old->set_version("0.1");
  old->set_last_seen_unix_ms(940'000);
  EXPECT_EQ(
      RenderWorkers(list, 1'004'000),
      "WORKER  HOST    SLURM JOB  DEVICES       JOBS                                            "
      "LAST SEEN  VERSION\n"
      "w-1     gpu-07  1234_5     cuda:0,1,2,3  demo/abcd#2 on cuda:0,1; demo/ef01#1 on cuda:3  "
      "   4s ago  0.1\n"
      "w-2     cpu-01  -          2 slots       -                                               "
      "1m04s ago  0.1\n");
  EXPECT_EQ(RenderWorkers(v1::ListWorkersResponse(), 0), "no live workers\n");
  v1::ListWorkersResponse gone;
  gone.set_not_live(2);
  EXPECT_EQ(RenderWorkers(gone, 0),
            "no live workers\n(2 workers that exited or went silent are not shown: onset workers "
            "--all)\n");
  v1::Worker* exited = gone.add_workers();
  exited->set_id("w-1");
  exited->set_last_seen_unix_ms(1000);
  exited->set_exited_unix_ms(1000);
  EXPECT_THAT(RenderWorkers(gone, 61'000), HasSubstr("1m00s ago, exited"));
  list.set_omitted(12);
  EXPECT_THAT(
      RenderWorkers(list, 1'004'000),
      ::testing::EndsWith("(12 workers seen longer ago are not shown: the list is bounded)\n"));
}

TEST(RenderTest, DeviceListsNameEachKindOnce) {
  google::protobuf::RepeatedPtrField<std::string> devices;
  EXPECT_EQ(FormatDevices(devices), "");
  for (const char* d : {"cpu:0", "cpu:1", "cpu:2"}) *devices.Add() = d;
  EXPECT_EQ(FormatDevices(devices), "cpu:0,1,2");
  devices.Clear();
  for (const char* d : {"cuda:3", "cuda:1", "other", "cuda:0"}) *devices.Add() = d;
  EXPECT_EQ(FormatDevices(devices), "cuda:3,1,other,cuda:0");
}

}  // namespace
}  // namespace onset::cli
