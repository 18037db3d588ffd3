#include "model/trainer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/flops.h"
#include "tests/model/temp_dir.h"

namespace onset::model {
namespace {

CellConfig TinyCell(int64_t tokens, int64_t seed = 0) {
  CellConfig c;
  auto e = ParseCellConfig(
      {{"model", {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 32}, {"arch", "swa:1"},
                  {"window", 8}}},
       {"train", {{"tokens", tokens}, {"batch_tokens", 512}, {"micro_batch", 8}, {"seed", seed},
                  {"log_every_steps", 10}}},
       {"eval", {{"every_tokens", tokens / 2}, {"heldout_seqs", 4}, {"niah_lengths", {32, 64}},
                 {"niah_depths", {0.5}}, {"niah_samples", 2}}}},
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
                          "niah/acc@64", "eval/seconds"}) {
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
      {{"model", {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 32}, {"arch", "swa:1"},
                  {"window", 8}}},
       {"train", {{"tokens", tokens}, {"batch_tokens", 512}, {"micro_batch", 8}, {"lr", 1e-2}}},
       {"data", {{"background", "file"}, {"path", path}, {"dtype", "uint32"},
                 {"vocab_size", 300}, {"heldout_fraction", 0.1}}},
       {"eval", {{"heldout_seqs", 4}, {"niah_lengths", {32, 64}}, {"niah_depths", {0.5}},
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

TEST(TrainerTest, TrainsOnATokenFileWithItsOwnVocabulary) {
  at::set_num_threads(1);
  testutil::TempDir dir;
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
  testutil::TempDir dir;
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

}  // namespace
}  // namespace onset::model
