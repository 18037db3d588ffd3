// WSD trunks and branches (model/config/wsd_trunk.h, trunk_progress.h): a trunk trains the
// stable phase once, each budget's branch starts from its checkpoint at the budget's branch
// point, and every branch is, bit for bit on the CPU, the independent run of its budget.
#include "model/training/trunk_progress.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include <ATen/Parallel.h>

#include "base/durable_file.h"
#include "base/metric_names.h"
#include "model/config/wsd_trunk.h"
#include "model/distributed/c10d_collective.h"
#include "model/training/stop_request.h"
#include "model/training/trainer.h"
#include "tests/model/distributed/thread_ranks.h"
#include "tests/model/training/parameters.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

using testing::ExpectSameParameters;
using testing::ParameterSnapshot;

using testutil::TempDir;

// Steps of 4 sequences of 32 tokens (128 tokens); the decay is the last quarter of the budget;
// train events every 5 steps. Budgets: 2560 (decay from 1920, a step boundary and a train event:
// the step that ends there is trained at the peak, which its train/lr says), 3000 (not a
// multiple of the step; decay from 2250, branch point 2176) and 4096 (decay from 3072, step 24,
// with no train event). Evaluated every quarter of the budget (640, 750 and 1024 tokens) unless
// `eval` says otherwise; lr 1e-2 with a 10% floor, where floor + (peak - floor) is not the peak.
constexpr int64_t kB1 = 2560, kB2 = 3000, kB3 = 4096;

CellConfig WsdCell(int64_t tokens, const nlohmann::json& train_extra = nlohmann::json::object(),
                   const nlohmann::json& eval_extra = nlohmann::json::object()) {
  nlohmann::json train = {{"tokens", tokens},  {"batch_tokens", 128},    {"micro_batch", 4},
                          {"lr", 1e-2},        {"min_lr_ratio", 0.1},    {"warmup_tokens", 256},
                          {"schedule", "wsd"}, {"decay_fraction", 0.25}, {"log_every_steps", 5},
                          {"seed", 3}};
  train.update(train_extra);
  nlohmann::json eval = {
      {"heldout_seqs", 2}, {"niah_lengths", {48}}, {"niah_depths", {0.5}}, {"niah_samples", 1}};
  eval.update(eval_extra);
  CellConfig c;
  auto e = ParseCellConfig({{"model",
                             {{"layers", 2},
                              {"d_model", 32},
                              {"heads", 2},
                              {"seq_len", 32},
                              {"arch", "swa:1"},
                              {"window", 8}}},
                            {"train", train},
                            {"eval", eval}},
                           &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

// The trunk of `cells` as the coordinator plans it: its largest branch's config, until = the
// largest branch point, the union of the step ends each branch evaluates at up to its branch
// point, and the branch points.
TrunkSpec TrunkOf(const std::vector<CellConfig>& cells) {
  TrunkSpec spec;
  std::set<int64_t> evals, points;
  for (const CellConfig& c : cells) {
    const int64_t bp = BranchPoint(c);
    if (bp >= spec.until) {
      spec.until = bp;
      spec.cell = c;
    }
    points.insert(bp);
    const std::optional<std::vector<int64_t>> ends = EvalStepEnds(c, bp);
    evals.insert(ends->begin(), ends->end());
  }
  spec.eval_at.assign(evals.begin(), evals.end());
  spec.branch_points.assign(points.begin(), points.end());
  return spec;
}

struct RunRecord {
  MemorySink sink;
  TrainResult result;
  std::optional<std::string> start_error;
  std::vector<at::Tensor> params;  // after the run
};

void Finish(Trainer& trainer, RunRecord* run) {
  run->result = trainer.Run();
  run->params = ParameterSnapshot(trainer);
}

std::unique_ptr<RunRecord> Independent(const CellConfig& c) {
  at::set_num_threads(1);
  auto run = std::make_unique<RunRecord>();
  Trainer trainer(c, at::kCPU, &run->sink);
  Finish(trainer, run.get());
  return run;
}

// The independent run of each budget, trained once for the whole suite.
const RunRecord& IndependentOf(const CellConfig& c) {
  static std::map<std::string, std::unique_ptr<RunRecord>>* runs =
      new std::map<std::string, std::unique_ptr<RunRecord>>();
  std::unique_ptr<RunRecord>& run = (*runs)[c.CanonicalText()];
  if (!run) run = Independent(c);
  return *run;
}

std::unique_ptr<RunRecord> TrainTrunk(const TrunkSpec& spec, const std::string& dir,
                                      bool resume = false, MetricsSink* sink = nullptr) {
  at::set_num_threads(1);
  auto run = std::make_unique<RunRecord>();
  Trainer trainer(spec, at::kCPU, sink != nullptr ? sink : &run->sink, dir);
  if (resume && (run->start_error = trainer.Resume())) return run;
  Finish(trainer, run.get());
  return run;
}

std::unique_ptr<RunRecord> Branch(const CellConfig& c, const std::string& file,
                                  const std::string& dir, bool resume = true) {
  at::set_num_threads(1);
  auto run = std::make_unique<RunRecord>();
  Trainer trainer(c, at::kCPU, &run->sink, dir);
  if ((run->start_error = trainer.StartBranch(file, resume))) return run;
  Finish(trainer, run.get());
  return run;
}

std::string TrunkFile(const std::string& dir, int64_t tokens) {
  return dir + "/" + CheckpointFileName(tokens);
}

bool IsTiming(const std::string& name) { return metric::DescribesTheMachine(name); }

// The train, eval and done events a run reported (once each: a replayed event is the same
// point), by event and tokens, without their timings.
using Points = std::map<std::pair<std::string, int64_t>, std::map<std::string, double>>;
Points PointsOf(const MemorySink& sink) {
  Points points;
  for (const MetricsEvent& e : sink.events) {
    if (e.event != "train" && e.event != "eval" && e.event != "done") continue;
    std::map<std::string, double>& metrics = points[{e.event, e.tokens}];
    for (const auto& [name, value] : e.metrics) {
      if (!IsTiming(name)) metrics[name] = value;
    }
  }
  return points;
}

// The branch reported what the independent run did, bit for bit, and ends with its parameters.
void ExpectTheIndependentRun(const RunRecord& branch, const CellConfig& c) {
  ASSERT_EQ(branch.start_error, std::nullopt);
  const RunRecord& independent = IndependentOf(c);
  ASSERT_EQ(branch.result.outcome, TrainOutcome::kDone);
  EXPECT_EQ(branch.result.tokens, independent.result.tokens);
  EXPECT_EQ(branch.result.steps, independent.result.steps);
  const Points want = PointsOf(independent.sink), got = PointsOf(branch.sink);
  EXPECT_GE(want.size(), 8u);
  std::set<std::pair<std::string, int64_t>> want_keys, got_keys;
  for (const auto& [key, metrics] : want) want_keys.insert(key);
  for (const auto& [key, metrics] : got) got_keys.insert(key);
  EXPECT_EQ(got_keys, want_keys) << "budget " << c.train.tokens;
  for (const auto& [key, metrics] : want) {
    if (!got.count(key)) continue;
    EXPECT_EQ(got.at(key), metrics) << key.first << " at " << key.second;
    if (key.first == "train") {
      EXPECT_TRUE(metrics.count("train/loss") && metrics.count("train/lr")) << key.second;
    }
  }
  ExpectSameParameters(branch.params, independent.params);
}

std::vector<int64_t> TokensOf(const MemorySink& sink, const std::string& event) {
  std::vector<int64_t> tokens;
  for (const MetricsEvent& e : sink.events) {
    if (e.event == event) tokens.push_back(e.tokens);
  }
  return tokens;
}

int64_t FileBytes(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

TEST(TrunkAndBranchTest, TheCoordinatorsPlanForTheseBudgets) {
  const TrunkSpec spec = TrunkOf({WsdCell(kB1), WsdCell(kB2), WsdCell(kB3)});
  EXPECT_EQ(spec.until, 3072);
  EXPECT_EQ(spec.branch_points, (std::vector<int64_t>{1920, 2176, 3072}));
  // 2560: 640, 1280, 1920; 3000: 768 (750), 1536 (1500); 4096: 1024, 2048, 3072.
  EXPECT_EQ(spec.eval_at, (std::vector<int64_t>{640, 768, 1024, 1280, 1536, 1920, 2048, 3072}));
  EXPECT_EQ(spec.cell.train.tokens, kB3);
  TrunkSpec parsed;
  ASSERT_EQ(ParseTrunkSpec(spec.ToJson(), &parsed), std::nullopt);
}

TEST(TrunkAndBranchTest, EveryBranchOfATrunkIsTheIndependentRunOfItsBudget) {
  TempDir dir;
  const std::vector<CellConfig> cells = {WsdCell(kB1), WsdCell(kB2), WsdCell(kB3)};
  const TrunkSpec spec = TrunkOf(cells);
  const std::unique_ptr<RunRecord> trunk = TrainTrunk(spec, dir.path());
  ASSERT_EQ(trunk->result.outcome, TrainOutcome::kDone);
  EXPECT_EQ(trunk->result.tokens, 3072);

  // It evaluates where its branches need it and nowhere else (no final evaluation), reports train
  // events on the cadence only (step 24 ends it without one), is done at `until` and keeps its
  // branch-point checkpoints whatever train.keep_checkpoints says.
  EXPECT_EQ(TokensOf(trunk->sink, "eval"), spec.eval_at);
  EXPECT_EQ(TokensOf(trunk->sink, "train"), (std::vector<int64_t>{640, 1280, 1920, 2560}));
  EXPECT_EQ(TokensOf(trunk->sink, "done"), (std::vector<int64_t>{3072}));
  std::set<int64_t> files;
  for (const CheckpointFile& f : ListCheckpoints(dir.path())) files.insert(f.tokens);
  const std::vector<int64_t> checkpoint_events = TokensOf(trunk->sink, "checkpoint");
  for (int64_t bp : spec.branch_points) {
    EXPECT_TRUE(files.count(bp)) << bp;
    EXPECT_EQ(std::count(checkpoint_events.begin(), checkpoint_events.end(), bp), 1) << bp;
  }

  for (const CellConfig& c : cells) {
    SCOPED_TRACE("budget " + std::to_string(c.train.tokens));
    TempDir own;
    const std::unique_ptr<RunRecord> branch =
        Branch(c, TrunkFile(dir.path(), BranchPoint(c)), own.path());
    ExpectTheIndependentRun(*branch, c);
    // It started as a resumed run at its branch point.
    ASSERT_GE(branch->sink.events.size(), 2u);
    EXPECT_EQ(branch->sink.events[1].event, "resume");
    EXPECT_EQ(branch->sink.events[1].tokens, BranchPoint(c));
  }
}

// Asks the trainer to stop (as SIGTERM does) when a train event at `tokens` or later goes out.
class StopAtTrainEvent : public MetricsSink {
 public:
  explicit StopAtTrainEvent(int64_t tokens) : tokens_(tokens) {}
  void Emit(const MetricsEvent& e) override {
    events.push_back(e);
    if (e.event == "train" && e.tokens >= tokens_) RequestStop();
  }
  std::vector<MetricsEvent> events;

 private:
  int64_t tokens_;
};

TEST(TrunkAndBranchTest, AStoppedTrunkResumesAndAnnouncesItsBranchPointsAgain) {
  TempDir dir;
  const CellConfig b2 = WsdCell(kB2);
  const TrunkSpec spec = TrunkOf({WsdCell(kB1), b2, WsdCell(kB3)});
  ClearStopRequest();
  StopAtTrainEvent stopping(2560);
  const std::unique_ptr<RunRecord> first = TrainTrunk(spec, dir.path(), false, &stopping);
  ClearStopRequest();
  ASSERT_EQ(first->result.outcome, TrainOutcome::kStopped);
  EXPECT_EQ(first->result.tokens, 2560);

  const std::unique_ptr<RunRecord> second = TrainTrunk(spec, dir.path(), /*resume=*/true);
  ASSERT_EQ(second->start_error, std::nullopt);
  ASSERT_EQ(second->result.outcome, TrainOutcome::kDone);
  // The branch points it passed before the stop are announced again, with their files' sizes,
  // before any new step.
  const std::vector<MetricsEvent>& events = second->sink.events;
  auto first_new = std::find_if(events.begin(), events.end(), [](const MetricsEvent& e) {
    return e.event == "train" && e.tokens > 2560;
  });
  for (int64_t bp : {1920, 2176}) {
    auto announced = std::find_if(events.begin(), events.end(), [&](const MetricsEvent& e) {
      return e.event == "checkpoint" && e.tokens == bp;
    });
    ASSERT_NE(announced, events.end()) << bp;
    EXPECT_EQ(announced->metrics.at("checkpoint/bytes"),
              static_cast<double>(FileBytes(TrunkFile(dir.path(), bp))));
    EXPECT_LT(announced, first_new) << bp;
  }

  TempDir own;
  ExpectTheIndependentRun(*Branch(b2, TrunkFile(dir.path(), 2176), own.path()), b2);
}

// A trunk planned for the two smaller budgets, extended when the largest joins.
void ExpectExtensionGivesTheIndependentRun(const CellConfig& b3, int64_t resumes_at) {
  TempDir dir;
  const CellConfig b1 = WsdCell(kB1), b2 = WsdCell(kB2);
  const std::unique_ptr<RunRecord> small = TrainTrunk(TrunkOf({b1, b2}), dir.path());
  ASSERT_EQ(small->result.tokens, 2176);

  const TrunkSpec larger = TrunkOf({b1, b2, b3});
  const std::unique_ptr<RunRecord> extended = TrainTrunk(larger, dir.path(), /*resume=*/true);
  ASSERT_EQ(extended->start_error, std::nullopt);
  ASSERT_EQ(extended->result.outcome, TrainOutcome::kDone);
  ASSERT_GE(extended->sink.events.size(), 2u);
  EXPECT_EQ(extended->sink.events[1].event, "resume");
  EXPECT_EQ(extended->sink.events[1].tokens, resumes_at);
  EXPECT_EQ(extended->result.tokens, 3072);

  TempDir own3, own2;
  ExpectTheIndependentRun(*Branch(b3, TrunkFile(dir.path(), 3072), own3.path()), b3);
  ExpectTheIndependentRun(*Branch(b2, TrunkFile(dir.path(), 2176), own2.path()), b2);
}

TEST(TrunkAndBranchTest, AnExtendedTrunkContinuesFromItsLastCheckpoint) {
  // Evaluated at 1536 and 3072 before its branch point: the smaller trunk evaluated at 1536.
  ExpectExtensionGivesTheIndependentRun(
      WsdCell(kB3, nlohmann::json::object(), {{"every_tokens", 1536}}), 2176);
}

TEST(TrunkAndBranchTest, AnExtendedTrunkGoesBackToEvaluateWhereTheNewBudgetDoes) {
  // Evaluated at 2048 only, which the smaller trunk passed: it resumes from its checkpoint at
  // 1920 (the one before 2048 that it kept, a branch point).
  ExpectExtensionGivesTheIndependentRun(
      WsdCell(kB3, nlohmann::json::object(), {{"every_tokens", 2048}}), 1920);
}

class BranchRefusalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    trunk_dir_ = new TempDir();
    const std::unique_ptr<RunRecord> trunk =
        TrainTrunk(TrunkOf({WsdCell(kB1), WsdCell(kB2)}), trunk_dir_->path());
    ASSERT_EQ(trunk->result.outcome, TrainOutcome::kDone);
  }
  static void TearDownTestSuite() {
    delete trunk_dir_;
    trunk_dir_ = nullptr;
  }

  // The error of starting `c` from the trunk's file at `tokens` (or `file`).
  static std::string Refusal(const CellConfig& c, const std::string& file, bool resume = true) {
    TempDir own;
    at::set_num_threads(1);
    MemorySink sink;
    Trainer trainer(c, at::kCPU, &sink, own.path());
    return trainer.StartBranch(file, resume).value_or("(started)");
  }
  static std::string File(int64_t tokens) { return TrunkFile(trunk_dir_->path(), tokens); }

  static TempDir* trunk_dir_;
};

TempDir* BranchRefusalTest::trunk_dir_ = nullptr;

TEST_F(BranchRefusalTest, AnotherStablePhase) {
  EXPECT_EQ(Refusal(WsdCell(kB1, {{"lr", 2e-2}}), File(1920)),
            File(1920) +
                ": written for a different stable phase (train.lr: checkpoint has 0.01, config "
                "has 0.02); a WSD run continues only a checkpoint of its own trunk");
}

TEST_F(BranchRefusalTest, AFilePastTheDecayStart) {
  EXPECT_EQ(Refusal(WsdCell(kB1), File(2176)),
            File(2176) +
                ": at 2176 tokens, past this cell's decay start at 1920 tokens (its branch point "
                "is 1920)");
}

TEST_F(BranchRefusalTest, AMissingEvalPoint) {
  // Every 256 tokens: the trunk evaluated at 640, 768, 1280, 1536 and 1920 only.
  EXPECT_EQ(Refusal(WsdCell(kB1, nlohmann::json::object(), {{"every_tokens", 256}}), File(1920)),
            File(1920) + " has no eval at 256 tokens, which this cell evaluates at");
}

TEST_F(BranchRefusalTest, ADamagedOrMissingFileIsNeverAFreshStart) {
  TempDir copies;
  const std::string damaged = copies.File(CheckpointFileName(1920));
  {
    std::string bytes;
    ASSERT_EQ(base::ReadFile(File(1920), &bytes), std::nullopt);
    copies.Write(CheckpointFileName(1920), bytes.substr(0, bytes.size() - 10));
  }
  const std::string damaged_error = Refusal(WsdCell(kB1), damaged);
  EXPECT_EQ(damaged_error.rfind(damaged + ": corrupt (", 0), 0u) << damaged_error;
  const std::string missing = copies.File("ckpt-nothing.pt");
  const std::string missing_error = Refusal(WsdCell(kB1), missing);
  EXPECT_EQ(missing_error.rfind(missing, 0), 0u) << missing_error;
  // Without --resume too.
  EXPECT_EQ(Refusal(WsdCell(kB1), missing, /*resume=*/false).rfind(missing, 0), 0u);
}

TEST_F(BranchRefusalTest, ACosineCell) {
  EXPECT_EQ(
      Refusal(WsdCell(kB1, {{"schedule", "cosine"}}), File(1920)),
      File(1920) + ": only a wsd cell branches from a trunk; this cell's train.schedule is cosine");
}

TEST_F(BranchRefusalTest, ACheckpointOfTheCellsOwnWinsWithResume) {
  const CellConfig b1 = WsdCell(kB1);
  TempDir own;
  {
    at::set_num_threads(1);
    MemorySink sink;
    Trainer trainer(b1, at::kCPU, &sink, own.path());
    ASSERT_EQ(trainer.StartBranch(File(1920), true), std::nullopt);
    ASSERT_EQ(trainer.Run().outcome, TrainOutcome::kDone);
  }
  // The trunk's file is not even read: its own newest checkpoint, at the end, is where it is.
  const std::unique_ptr<RunRecord> again = Branch(b1, "/nonexistent/ckpt.pt", own.path());
  ASSERT_EQ(again->start_error, std::nullopt);
  EXPECT_EQ(again->sink.events[1].event, "resume");
  EXPECT_EQ(again->sink.events[1].tokens, kB1);
  // Without --resume the trunk's file is where it starts.
  EXPECT_EQ(Refusal(b1, "/nonexistent/ckpt.pt", /*resume=*/false).rfind("/nonexistent/ckpt.pt", 0),
            0u);
}

// Data parallel: rank 0 chooses the trunk's file and the other ranks load it too.
TEST_F(BranchRefusalTest, RanksBranchFromTheFileRankZeroChose) {
  const CellConfig b1 = WsdCell(kB1);
  at::set_num_threads(1);
  std::vector<RunRecord> runs(2);
  std::mutex construction;  // the constructor seeds and draws from the global generator
  TempDir own;
  const std::string error = testing::OnThreadRanks(2, [&](C10dCollective& collective, int r) {
    std::unique_ptr<Trainer> trainer;
    {
      std::lock_guard<std::mutex> lock(construction);
      trainer = std::make_unique<Trainer>(b1, at::kCPU, &runs[r].sink, own.path(), &collective);
    }
    if ((runs[r].start_error = trainer->StartBranch(File(1920), true))) return;
    runs[r].result = trainer->Run();
    runs[r].params = ParameterSnapshot(*trainer);
  });
  ASSERT_EQ(error, "");
  ASSERT_EQ(runs[0].start_error, std::nullopt);
  ASSERT_EQ(runs[1].start_error, std::nullopt);
  EXPECT_EQ(runs[0].result.steps, IndependentOf(b1).result.steps);
  ExpectSameParameters(runs[1].params, runs[0].params);
  // The same steps as one process, to float rounding (the gradients are summed across ranks).
  ASSERT_EQ(runs[0].params.size(), IndependentOf(b1).params.size());
  for (size_t i = 0; i < runs[0].params.size(); ++i) {
    EXPECT_TRUE(at::allclose(runs[0].params[i], IndependentOf(b1).params[i], 1e-4, 1e-5)) << i;
  }

  // A refusal stops every rank.
  const CellConfig other = WsdCell(kB1, {{"lr", 2e-2}});
  std::vector<std::optional<std::string>> errors(2);
  TempDir own2;
  ASSERT_EQ(testing::OnThreadRanks(2,
                                   [&](C10dCollective& collective, int r) {
                                     std::unique_ptr<Trainer> trainer;
                                     {
                                       std::lock_guard<std::mutex> lock(construction);
                                       trainer =
                                           std::make_unique<Trainer>(other, at::kCPU, &runs[r].sink,
                                                                     own2.path(), &collective);
                                     }
                                     errors[r] = trainer->StartBranch(File(1920), true);
                                   }),
            "");
  ASSERT_TRUE(errors[0].has_value());
  EXPECT_NE(errors[0]->find("different stable phase"), std::string::npos) << *errors[0];
  ASSERT_TRUE(errors[1].has_value());
  EXPECT_NE(errors[1]->find("rank 0 could not resume"), std::string::npos) << *errors[1];
}

// What a branch takes of its trunk's record.
TEST(AdoptTrunkProgressTest, KeepsTrainEventsAndTheCellsOwnEvals) {
  const CellConfig b1 = WsdCell(2048);  // evaluates at 512, 1024, 1536; branch point 1536
  TrainProgress p;
  p.tokens = 1536;
  auto line = [](const char* event, int64_t tokens) {
    return MetricsEvent{event, tokens, std::nullopt, {{"x", 1.0}}}.Format() + "\n";
  };
  p.reported = line("train", 640) + line("eval", 512) + line("eval", 768) + line("eval", 1024) +
               line("checkpoint", 1024) + line("train", 1280) + line("eval", 1536);
  ASSERT_EQ(AdoptTrunkProgress("t.pt", b1, &p), std::nullopt);
  EXPECT_EQ(p.reported, line("train", 640) + line("eval", 512) + line("eval", 1024) +
                            line("train", 1280) + line("eval", 1536));
  EXPECT_EQ(ReportedEvals(p.reported), (std::set<int64_t>{512, 1024, 1536}));

  TrainProgress q;
  q.tokens = 1536;
  q.reported = line("eval", 512) + line("eval", 1536);
  const std::string before = q.reported;
  EXPECT_EQ(AdoptTrunkProgress("t.pt", b1, &q),
            "t.pt has no eval at 1024 tokens, which this cell evaluates at");
  EXPECT_EQ(q.reported, before);
  q.tokens = 1500;
  EXPECT_EQ(AdoptTrunkProgress("t.pt", b1, &q),
            "t.pt: at 1500 tokens, not a step boundary (a multiple of 128)");
}

TEST(TrunkResumeRefusalTest, ACheckpointThatPassedAnEvalPoint) {
  TrainProgress p;
  p.tokens = 2176;
  p.reported = MetricsEvent{"eval", 1536, std::nullopt, {}}.Format() + "\n";
  EXPECT_EQ(TrunkResumeRefusal("t.pt", {1536, 3072}, p), std::nullopt);
  EXPECT_EQ(TrunkResumeRefusal("t.pt", {1536, 2048, 3072}, p),
            "t.pt: has no eval at 2048 tokens, which the trunk evaluates at");
}

}  // namespace
}  // namespace onset::model
