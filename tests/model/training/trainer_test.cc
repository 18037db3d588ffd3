#include "model/training/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <exception>
#include <memory>
#include <mutex>

#include <ATen/Parallel.h>

#include "base/metric_names.h"
#include "model/config/flops.h"
#include "model/distributed/c10d_collective.h"
#include "model/training/stop_request.h"
#include "tests/model/distributed/thread_ranks.h"
#include "tests/model/training/parameters.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

using testing::ExpectSameParameters;
using testing::ParameterSnapshot;

using testutil::TempDir;

CellConfig TinyCell(int64_t tokens, int64_t seed = 0) {
  CellConfig c;
  auto e = ParseCellConfig({{"model",
                             {{"layers", 2},
                              {"d_model", 32},
                              {"heads", 2},
                              {"seq_len", 32},
                              {"arch", "swa:1"},
                              {"window", 8}}},
                            {"train",
                             {{"tokens", tokens},
                              {"batch_tokens", 512},
                              {"micro_batch", 8},
                              {"seed", seed},
                              {"log_every_steps", 10}}},
                            {"eval",
                             {{"every_tokens", tokens / 2},
                              {"heldout_seqs", 4},
                              {"niah_lengths", {32, 64}},
                              {"niah_records", 2},
                              {"niah_depths", {0.5}},
                              {"niah_samples", 2}}}},
                           &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

TEST(TrainerTest, LossFallsOnTheSyntheticStream) {
  MemorySink sink;
  Trainer trainer(TinyCell(40'960), at::kCPU, &sink);
  TrainResult r = trainer.Run();
  ASSERT_EQ(r.outcome, TrainOutcome::kDone);
  EXPECT_EQ(r.steps, 80);  // 40960 tokens / (16 sequences * 32 tokens)
  EXPECT_EQ(r.tokens, 40'960);
  // Starts near ln(264) = 5.6 (uniform over the vocabulary).
  EXPECT_NEAR(r.step_losses.front(), std::log(264.0), 0.3);
  double last = 0;
  for (int i = 70; i < 80; ++i) last += r.step_losses[i] / 10;
  EXPECT_LT(last, 0.7 * r.step_losses.front());

  // Protocol: start, train..., eval at half and end, done; tokens never decrease.
  ASSERT_GE(sink.events.size(), 4u);
  EXPECT_EQ(sink.events.front().event, "start");
  EXPECT_GT(sink.events.front().metrics.at("model/non_embedding_params"), 0);
  EXPECT_EQ(sink.events.back().event, "done");
  EXPECT_EQ(sink.events.back().tokens, 40'960);
  int evals = 0;
  int64_t tokens = 0;
  for (const MetricsEvent& e : sink.events) {
    EXPECT_GE(e.tokens, tokens);
    tokens = e.tokens;
    if (e.event != "eval") continue;
    ++evals;
    for (const char* m : {"eval/heldout_loss", "eval/short_loss", "niah/acc", "niah/acc@32",
                          "niah/acc@64", "niah/extrapolation/acc", "eval/seconds"}) {
      EXPECT_TRUE(e.metrics.count(m)) << m;
    }
    EXPECT_GE(e.metrics.at("niah/acc"), 0.0);
    EXPECT_LE(e.metrics.at("niah/acc"), 1.0);
  }
  EXPECT_EQ(evals, 2);
}

TEST(TrainerTest, LogSpacedEvalsLandOnTheFirstStepPastEachPoint) {
  CellConfig c = TinyCell(16'384);
  // 4 points from 512 to 16384 tokens: 512, 1625, 5161, 16384; steps are 512 tokens.
  c.eval.every_tokens = 0;
  c.eval.log_points = 4;
  c.eval.log_start = 512;
  MemorySink sink;
  Trainer trainer(c, at::kCPU, &sink);
  ASSERT_EQ(trainer.Run().outcome, TrainOutcome::kDone);
  std::vector<int64_t> evals;
  for (const MetricsEvent& e : sink.events) {
    if (e.event == "eval") evals.push_back(e.tokens);
  }
  EXPECT_EQ(evals, (std::vector<int64_t>{512, 2048, 5632, 16'384}));
}

TEST(TrainerTest, SameSeedSameLosses) {
  MemorySink s1, s2, s3;
  TrainResult a = Trainer(TinyCell(2'048, 1), at::kCPU, &s1).Run();
  TrainResult b = Trainer(TinyCell(2'048, 1), at::kCPU, &s2).Run();
  TrainResult c = Trainer(TinyCell(2'048, 2), at::kCPU, &s3).Run();
  ASSERT_EQ(a.step_losses.size(), 4u);
  EXPECT_EQ(a.step_losses, b.step_losses);
  EXPECT_NE(a.step_losses, c.step_losses);
}

// A cell's numerics are its train.precision, never the device's: a bf16 cell trains with bf16
// autocast on the CPU too (its losses differ from the fp32 twin's), deterministically.
TEST(TrainerTest, PrecisionIsTheCellsNotTheDevices) {
  at::set_num_threads(1);
  CellConfig fp32 = TinyCell(2048);
  CellConfig bf16 = fp32;
  bf16.train.precision = "bf16";
  auto losses = [](const CellConfig& c) {
    MemorySink sink;
    return Trainer(c, at::kCPU, &sink).Run().step_losses;
  };
  const std::vector<double> a = losses(fp32), b = losses(bf16);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_NE(a, b);
  EXPECT_EQ(b, losses(bf16));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.05) << i;  // same model
}

// Weighing the answer targets changes what is optimised from the first step on, but the loss
// reported is the plain mean over every target: the first step's loss (taken before any update)
// is the same as the unweighted twin's, the later ones are not.
TEST(TrainerTest, TheAnswerLossWeightChangesTheObjectiveNotTheReportedLoss) {
  at::set_num_threads(1);
  CellConfig plain = TinyCell(4096);
  plain.data.records_per_seq = 3;
  CellConfig weighted = plain;
  weighted.train.answer_loss_weight = 8.0;
  auto losses = [](const CellConfig& c) {
    MemorySink sink;
    return Trainer(c, at::kCPU, &sink).Run().step_losses;
  };
  const std::vector<double> a = losses(plain), b = losses(weighted);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  EXPECT_NEAR(a[0], b[0], 1e-6);
  EXPECT_NE(a.back(), b.back());
  EXPECT_EQ(b, losses(weighted));  // deterministic
}

TEST(TrainerTest, DivergenceStopsTheRun) {
  CellConfig c = TinyCell(20'480);
  c.train.lr = 1e9;  // the parser caps lr at 10; force a blow-up directly
  c.train.grad_clip = 0;
  c.model.init_std = 1.0;
  MemorySink sink;
  TrainResult r = Trainer(c, at::kCPU, &sink).Run();
  EXPECT_EQ(r.outcome, TrainOutcome::kDiverged);
  EXPECT_EQ(sink.events.back().event, "diverged");
  EXPECT_LT(r.tokens, 20'480);
}

// Asks the trainer to stop (as SIGTERM does) when the first train event goes out.
class StopAtFirstTrainEvent : public MetricsSink {
 public:
  void Emit(const MetricsEvent& e) override {
    events.push_back(e);
    if (e.event == "train") RequestStop();
  }
  std::vector<MetricsEvent> events;
};

TEST(TrainerTest, AStopRequestCheckpointsAndTheResumedRunEndsAsIfUninterrupted) {
  at::set_num_threads(1);
  TempDir dir;
  CellConfig c = TinyCell(8'192);
  c.train.log_every_steps = 4;
  MemorySink straight;
  TrainResult whole = Trainer(c, at::kCPU, &straight).Run();

  ClearStopRequest();
  StopAtFirstTrainEvent stopping;
  int64_t now_ms = 1'000'000;  // each event one millisecond after the one before
  Trainer stopped_trainer(c, at::kCPU, &stopping, dir.path());
  stopped_trainer.set_wall_clock([&now_ms] { return ++now_ms; });
  TrainResult first = stopped_trainer.Run();
  ClearStopRequest();
  EXPECT_EQ(first.outcome, TrainOutcome::kStopped);
  EXPECT_EQ(first.tokens, 4 * 512 * 1);  // stopped after the step that emitted the event
  ASSERT_GE(stopping.events.size(), 2u);
  EXPECT_EQ(stopping.events.back().event, "stopped");
  EXPECT_EQ(stopping.events[stopping.events.size() - 2].event, "checkpoint");

  MemorySink rest;
  Trainer resumed(c, at::kCPU, &rest, dir.path());
  now_ms = 2'000'000;
  resumed.set_wall_clock([&now_ms] { return ++now_ms; });
  ASSERT_EQ(resumed.Resume(), std::nullopt);
  TrainResult second = resumed.Run();
  EXPECT_EQ(second.outcome, TrainOutcome::kDone);
  EXPECT_EQ(second.tokens, 8'192);
  EXPECT_EQ(second.step_losses.back(), whole.step_losses.back());  // bit for bit on CPU
  // After "start" and "resume", the train event reported before the stop is sent again.
  ASSERT_GE(rest.events.size(), 3u);
  EXPECT_EQ(rest.events[1].event, "resume");
  EXPECT_EQ(rest.events[1].metrics.at("train/resumed_at_tokens"), 2048);
  EXPECT_EQ(rest.events[2].event, "train");
  EXPECT_EQ(rest.events[2].tokens, 2048);
  EXPECT_EQ(rest.events[2].metrics.at("train/loss"), stopping.events[1].metrics.at("train/loss"));
  // Every event carries the time it was measured; the one reported again keeps its own.
  for (const MetricsEvent& e : stopping.events) {
    ASSERT_TRUE(e.at_unix_ms.has_value()) << e.Format();
    EXPECT_GT(*e.at_unix_ms, 1'000'000) << e.Format();
    EXPECT_LT(*e.at_unix_ms, 2'000'000) << e.Format();
  }
  EXPECT_EQ(rest.events[2].at_unix_ms, stopping.events[1].at_unix_ms);
  for (const MetricsEvent& e : rest.events) ASSERT_TRUE(e.at_unix_ms.has_value()) << e.Format();
  EXPECT_GT(*rest.events[1].at_unix_ms, 2'000'000);
  EXPECT_GT(*rest.events.back().at_unix_ms, 2'000'000);
}

// A "text" in a 300-token vocabulary: a fixed random walk with few successors per token,
// learnable like the Markov background.
std::vector<int64_t> WalkText(int n) {
  std::vector<int64_t> ids(n);
  Rng rng(42);
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    t = (t * 7 + 3 + 50 * rng.Below(3)) % 300;
    ids[i] = t;
  }
  return ids;
}

CellConfig FileCell(const std::string& path, int64_t tokens) {
  CellConfig c;
  auto e = ParseCellConfig(
      {{"model",
        {{"layers", 2},
         {"d_model", 32},
         {"heads", 2},
         {"seq_len", 32},
         {"arch", "swa:1"},
         {"window", 8}}},
       {"train", {{"tokens", tokens}, {"batch_tokens", 512}, {"micro_batch", 8}, {"lr", 1e-2}}},
       {"data",
        {{"background", "file"},
         {"path", path},
         {"dtype", "uint32"},
         {"vocab_size", 300},
         {"heldout_fraction", 0.1}}},
       {"eval",
        {{"heldout_seqs", 4},
         {"niah_lengths", {48, 64}},
         {"niah_depths", {0.5}},
         {"niah_samples", 2}}}},
      &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

TEST(TrainerTest, MfuIsThroughputTimesModelFlopsOverThePeak) {
  at::set_num_threads(1);
  MemorySink sink;
  const CellConfig config = TinyCell(2048);
  Trainer trainer(config, at::kCPU, &sink);
  trainer.set_peak_flops(1e9);
  trainer.Run();
  const double per_token =
      TrainFlopsPerToken(config.model, trainer.model()->CountParams().non_embedding);
  int with_mfu = 0;
  for (const MetricsEvent& e : sink.events) {
    if (e.event != "train" && e.event != "done") continue;
    ASSERT_TRUE(e.metrics.count("train/mfu")) << e.event;
    EXPECT_DOUBLE_EQ(e.metrics.at("train/mfu"),
                     e.metrics.at("train/tokens_per_second") * per_token / 1e9);
    ++with_mfu;
  }
  EXPECT_GE(with_mfu, 2);
}

// train/grad_norm is the gradient's norm before clipping, and measuring it changes nothing: a
// run that clips at a bound it never reaches (1e9) trains and reports exactly as one that does
// not clip, and a run clipped hard (1e-3) reports norms above its bound while training
// differently. Every train event carries the process's peak resident memory.
TEST(TrainerTest, TheGradientNormIsReportedBeforeClippingAndMeasuringItChangesNothing) {
  at::set_num_threads(1);
  auto run = [](double clip, MemorySink* sink) {
    CellConfig config = TinyCell(2'048, 3);
    config.train.grad_clip = clip;
    config.train.log_every_steps = 1;
    return Trainer(config, at::kCPU, sink).Run();
  };
  MemorySink off, loose, tight;
  const TrainResult a = run(0, &off);
  const TrainResult b = run(1e9, &loose);
  const TrainResult c = run(1e-3, &tight);
  EXPECT_EQ(a.step_losses, b.step_losses);
  EXPECT_NE(a.step_losses, c.step_losses);
  auto norms = [](const MemorySink& sink) {
    std::vector<double> out;
    for (const MetricsEvent& e : sink.events) {
      if (e.event != "train") continue;
      EXPECT_TRUE(e.metrics.count("train/peak_rss_bytes"));
      EXPECT_GT(e.metrics.at("train/peak_rss_bytes"), 1e6);
      EXPECT_FALSE(e.metrics.count("train/peak_cuda_allocated_bytes"));  // a CPU run
      if (e.metrics.count("train/grad_norm")) out.push_back(e.metrics.at("train/grad_norm"));
    }
    return out;
  };
  const std::vector<double> unclipped = norms(off);
  ASSERT_EQ(unclipped.size(), a.step_losses.size());  // every step reports with log_every 1
  EXPECT_EQ(unclipped, norms(loose));
  for (double n : unclipped) {
    EXPECT_TRUE(std::isfinite(n));
    EXPECT_GT(n, 0);
  }
  // The first step's gradient is the same in every run (same weights, same batch): clipping
  // applies after the norm is taken.
  const std::vector<double> clipped = norms(tight);
  ASSERT_FALSE(clipped.empty());
  EXPECT_NEAR(clipped[0], unclipped[0], 1e-9 * unclipped[0]);
  for (double n : clipped) EXPECT_GT(n, 1e-3);
}

TEST(TrainerTest, TrainsOnATokenFileWithItsOwnVocabulary) {
  at::set_num_threads(1);
  TempDir dir;
  const std::string path = dir.WriteTokens<uint32_t>("walk.bin", WalkText(20'000));
  MemorySink sink;
  Trainer trainer(FileCell(path, 40'960), at::kCPU, &sink);
  EXPECT_EQ(trainer.model()->config().vocab_size, 312);  // 300 + 5 specials, padded
  TrainResult r = trainer.Run();
  ASSERT_EQ(r.outcome, TrainOutcome::kDone);
  EXPECT_NEAR(r.step_losses.front(), std::log(312.0), 0.3);
  // It learns the walk (3 successors a token; the records' random keys and values stay
  // unpredictable).
  EXPECT_LT(r.step_losses.back(), 0.7 * r.step_losses.front());
  const MetricsEvent* last_eval = nullptr;
  for (const MetricsEvent& e : sink.events) {
    if (e.event == "eval") last_eval = &e;
  }
  ASSERT_NE(last_eval, nullptr);
  EXPECT_TRUE(last_eval->metrics.count("eval/heldout_loss"));
  EXPECT_TRUE(last_eval->metrics.count("niah/acc@64"));
}

TEST(TrainerTest, AnUnusableTokenFileIsADataError) {
  TempDir dir;
  std::vector<int64_t> ids = WalkText(20'000);
  ids[1234] = 300;  // one id past the vocabulary
  const std::string path = dir.WriteTokens<uint32_t>("bad.bin", ids);
  MemorySink sink;
  try {
    Trainer trainer(FileCell(path, 2048), at::kCPU, &sink);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "data.path: " + path +
                  ": token id 300 at token 1234 (byte offset 4936) is outside the vocabulary: "
                  "data.vocab_size is 300");
  }
  EXPECT_TRUE(sink.events.empty());
}

// Data parallel: ranks are threads of this process (tests/model/distributed/thread_ranks.h).

struct RankRun {
  MemorySink sink;
  TrainResult result;
  std::optional<std::string> resume_error;
  std::vector<at::Tensor> params;  // after the run
};

// Trains `config` on `world` ranks (world 1: a plain Trainer with no collective).
std::vector<RankRun> TrainOnRanks(const CellConfig& config, int world,
                                  const std::string& checkpoint_dir = "", bool resume = false) {
  at::set_num_threads(1);
  std::vector<RankRun> runs(world);
  if (world == 1) {
    Trainer trainer(config, at::kCPU, &runs[0].sink, checkpoint_dir);
    if (resume && (runs[0].resume_error = trainer.Resume())) return runs;
    runs[0].result = trainer.Run();
    runs[0].params = ParameterSnapshot(trainer);
    return runs;
  }
  std::mutex construction;  // the constructor seeds and draws from the global generator
  const std::string error = testing::OnThreadRanks(world, [&](C10dCollective& collective, int r) {
    std::unique_ptr<Trainer> trainer;
    {
      std::lock_guard<std::mutex> lock(construction);
      trainer =
          std::make_unique<Trainer>(config, at::kCPU, &runs[r].sink, checkpoint_dir, &collective);
    }
    if (resume && (runs[r].resume_error = trainer->Resume())) return;
    runs[r].result = trainer->Run();
    runs[r].params = ParameterSnapshot(*trainer);
  });
  EXPECT_EQ(error, "");
  return runs;
}

// Float sums in another order: the ranks add their shares' gradients separately and Gloo adds
// those, so parameters and losses agree with one rank's to float rounding, amplified by AdamW
// (which divides by the gradients' running RMS). Observed: up to 2e-6 after two steps of an
// uneven split (exactly equal when the shares are whole micro-batches); weighting the shares
// wrongly (each rank's mean counted once) moves parameters by ~4e-3.
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-4;

void ExpectCloseParameters(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(at::allclose(a[i], b[i], kRtol, kAtol))
        << "parameter " << i << ": max |diff| " << (a[i] - b[i]).abs().max().item<double>();
  }
}

void ExpectCloseLosses(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], kRtol * std::abs(b[i])) << i;
}

// Rank 0 reports what one process reports: the same events at the same tokens, the same
// numbers except timings (and train losses to float rounding).
void ExpectSameReports(const MemorySink& ranks, const MemorySink& one) {
  ASSERT_EQ(ranks.events.size(), one.events.size());
  for (size_t i = 0; i < one.events.size(); ++i) {
    const MetricsEvent &a = ranks.events[i], &b = one.events[i];
    EXPECT_EQ(a.event, b.event) << i;
    EXPECT_EQ(a.tokens, b.tokens) << i;
    EXPECT_EQ(a.step, b.step) << i;
    for (const auto& [name, value] : b.metrics) {
      ASSERT_TRUE(a.metrics.count(name)) << b.event << " " << name;
      if (metric::DescribesTheMachine(name)) continue;  // timings, memory
      EXPECT_NEAR(a.metrics.at(name), value, kRtol * std::abs(value) + kAtol)
          << b.event << " at " << b.tokens << ": " << name;
    }
  }
}

TEST(TrainerDataParallelTest, TwoRanksOnHalfTheBatchEachTakeTheOneRankSteps) {
  const CellConfig c = TinyCell(1'024);  // 2 steps of 16 sequences, evaluations at 512 and 1024
  std::vector<RankRun> one = TrainOnRanks(c, 1);
  std::vector<RankRun> two = TrainOnRanks(c, 2);
  ASSERT_EQ(two[0].result.outcome, TrainOutcome::kDone);
  ASSERT_EQ(two[1].result.outcome, TrainOutcome::kDone);
  EXPECT_EQ(two[0].result.steps, 2);
  EXPECT_EQ(two[0].result.tokens, 1'024);
  ExpectCloseParameters(two[0].params, one[0].params);
  ExpectSameParameters(two[1].params, two[0].params);  // the ranks never drift apart
  ExpectCloseLosses(two[0].result.step_losses, one[0].result.step_losses);
  EXPECT_EQ(two[1].result.step_losses, two[0].result.step_losses);
  ExpectSameReports(two[0].sink, one[0].sink);
  EXPECT_TRUE(two[1].sink.events.empty());
}

TEST(TrainerDataParallelTest, UnevenSharesAreWeightedByTheirSize) {
  CellConfig c = TinyCell(192);
  c.train.batch_tokens = 96;  // 3 sequences a step over 2 ranks: 1 and 2
  c.train.micro_batch = 2;
  std::vector<RankRun> one = TrainOnRanks(c, 1);
  std::vector<RankRun> two = TrainOnRanks(c, 2);
  ASSERT_EQ(one[0].result.steps, 2);
  ExpectCloseParameters(two[0].params, one[0].params);
  ExpectSameParameters(two[1].params, two[0].params);
  ExpectCloseLosses(two[0].result.step_losses, one[0].result.step_losses);
}

TEST(TrainerDataParallelTest, ARankWithNoSequencesStillTakesTheStep) {
  CellConfig c = TinyCell(128);
  c.train.batch_tokens = 64;  // 2 sequences a step over 3 ranks: 0, 1 and 1
  std::vector<RankRun> one = TrainOnRanks(c, 1);
  std::vector<RankRun> three = TrainOnRanks(c, 3);
  ASSERT_EQ(three[0].result.steps, 2);
  ExpectCloseParameters(three[0].params, one[0].params);
  ExpectSameParameters(three[1].params, three[0].params);
  ExpectSameParameters(three[2].params, three[0].params);
  ExpectCloseLosses(three[2].result.step_losses, one[0].result.step_losses);
}

TEST(TrainerDataParallelTest, DivergenceStopsEveryRankAtTheSameStep) {
  CellConfig c = TinyCell(20'480);
  c.train.lr = 1e9;
  c.train.grad_clip = 0;
  c.model.init_std = 1.0;
  std::vector<RankRun> two = TrainOnRanks(c, 2);
  EXPECT_EQ(two[0].result.outcome, TrainOutcome::kDiverged);
  EXPECT_EQ(two[1].result.outcome, TrainOutcome::kDiverged);
  EXPECT_EQ(two[1].result.steps, two[0].result.steps);
  ASSERT_FALSE(two[0].sink.events.empty());
  EXPECT_EQ(two[0].sink.events.back().event, "diverged");
  EXPECT_TRUE(two[1].sink.events.empty());
}

TEST(TrainerDataParallelTest, RanksResumeFromTheCheckpointRankZeroChooses) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  CellConfig c = TinyCell(1'024);
  c.train.checkpoint_every_tokens = 512;
  std::vector<RankRun> one = TrainOnRanks(c, 1, dir.path());  // checkpoints at 512 and 1024
  // A damaged newest checkpoint: rank 0 skips it, and the other rank must load the same older
  // one rather than look for itself.
  const std::string newest = dir.path() + "/" + CheckpointFileName(1'024);
  ASSERT_EQ(::truncate(newest.c_str(), 100), 0);

  std::vector<RankRun> two = TrainOnRanks(c, 2, dir.path(), /*resume=*/true);
  EXPECT_EQ(two[0].resume_error, std::nullopt);
  EXPECT_EQ(two[1].resume_error, std::nullopt);
  ASSERT_EQ(two[0].result.step_losses.size(), 1u);  // the second step only
  EXPECT_NEAR(two[0].result.step_losses[0], one[0].result.step_losses[1], 1e-4);
  ExpectCloseParameters(two[0].params, one[0].params);
  ExpectSameParameters(two[1].params, two[0].params);
  ASSERT_GE(two[0].sink.events.size(), 2u);
  EXPECT_EQ(two[0].sink.events[1].event, "resume");
  EXPECT_EQ(two[0].sink.events[1].tokens, 512);
  EXPECT_TRUE(two[1].sink.events.empty());
}

TEST(TrainerDataParallelTest, ACheckpointOfAnotherConfigStopsEveryRank) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  CellConfig c = TinyCell(512);
  TrainOnRanks(c, 1, dir.path());
  c.train.lr *= 2;
  std::vector<RankRun> two = TrainOnRanks(c, 2, dir.path(), /*resume=*/true);
  ASSERT_TRUE(two[0].resume_error.has_value());
  EXPECT_NE(two[0].resume_error->find("written for a different config"), std::string::npos)
      << *two[0].resume_error;
  ASSERT_TRUE(two[1].resume_error.has_value());
  EXPECT_NE(two[1].resume_error->find("rank 0 could not resume"), std::string::npos)
      << *two[1].resume_error;
}

}  // namespace
}  // namespace onset::model
