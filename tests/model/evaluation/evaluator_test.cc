// The evaluator's metrics on tiny untrained hybrids: names, ranges, which lengths each summary
// covers, the key-swap control on a model whose answer ignores the prompt, and the ablation.
#include "model/evaluation/evaluator.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

namespace onset::model {
namespace {

CellConfig Cell(int ablation_heads, const nlohmann::json& eval_extra = nlohmann::json::object(),
                const std::string& arch = "FSL") {
  CellConfig c;
  nlohmann::json eval = {{"heldout_seqs", 2},
                         {"niah_lengths", {24, 32, 48}},
                         {"niah_depths", {0.2, 0.8}},
                         {"niah_samples", 2},
                         {"niah_records", 2},
                         {"rh_min_samples", 8},
                         {"ablation_heads", ablation_heads},
                         {"niah_variants", {"single", "multi-value", "multi-query"}}};
  for (const auto& [k, v] : eval_extra.items()) eval[k] = v;
  auto e = ParseCellConfig({{"model",
                             {{"layers", static_cast<int>(arch.size())},
                              {"d_model", 32},
                              {"heads", 2},
                              {"seq_len", 32},
                              {"arch", arch},
                              {"window", 8}}},
                            {"data", {{"records_per_seq", 3}, {"key_len", 1}, {"value_len", 1}}},
                            {"eval", eval}},
                           &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

double Get(const std::map<std::string, double>& m, const std::string& name) {
  EXPECT_TRUE(m.count(name)) << name;
  return m.count(name) ? m.at(name) : NAN;
}

TEST(EvaluatorTest, ReportsTheHeadlineItsControlsBucketsAndVariants) {
  at::set_num_threads(1);
  CellConfig config = Cell(0);
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);
  const std::map<std::string, double> m = evaluator.Run(model);
  for (const char* name :
       {"niah/acc@24", "niah/acc@32", "niah/acc@48", "niah/acc", "niah/extrapolation/acc",
        "niah/control/distractor_copy_rate@48", "niah/control/distractor_copy_rate",
        "niah/control/key_swap_rate@24", "niah/control/key_swap_rate", "niah/single/acc",
        "niah/multi-value/acc", "niah/multi-query/acc@48"}) {
    EXPECT_GE(Get(m, name), 0.0) << name;
    EXPECT_LE(Get(m, name), 1.0) << name;
  }
  // The headline averages the lengths within seq_len = 32 only; 48 is extrapolation.
  EXPECT_DOUBLE_EQ(Get(m, "niah/acc"), (Get(m, "niah/acc@24") + Get(m, "niah/acc@32")) / 2);
  EXPECT_DOUBLE_EQ(Get(m, "niah/extrapolation/acc"), Get(m, "niah/acc@48"));
  EXPECT_DOUBLE_EQ(
      Get(m, "niah/control/key_swap_rate"),
      (Get(m, "niah/control/key_swap_rate@24") + Get(m, "niah/control/key_swap_rate@32")) / 2);
  // By the needle's depth, over the in-length samples: the depths average to the headline.
  EXPECT_NEAR((Get(m, "niah/acc_depth@0.2") + Get(m, "niah/acc_depth@0.8")) / 2, Get(m, "niah/acc"),
              1e-12);
  // The study window buckets (here the cell's own window, 8) and the own-window buckets.
  EXPECT_TRUE(m.count("niah/acc_in_window") || m.count("niah/acc_beyond_window"));
  EXPECT_TRUE(m.count("niah/acc_beyond_own_window"));
  EXPECT_EQ(m.count("niah/acc_beyond_window"), m.count("niah/acc_beyond_own_window"));
  EXPECT_GE(Get(m, "eval/niah_seconds"), 0.0);
  // Losses: the background ones leave the record tokens out, so they differ from the whole.
  EXPECT_GT(Get(m, "eval/heldout_loss"), 0.0);
  EXPECT_NE(Get(m, "eval/heldout_background_loss"), Get(m, "eval/heldout_loss"));
  EXPECT_GT(Get(m, "eval/short_loss"), 0.0);
  // 8 headline samples within seq_len (2 lengths x 2 depths x 2): exactly rh_min_samples, so
  // every F/S head is scored, answered right or not.
  EXPECT_EQ(Get(m, "rh/samples"), 8.0);
  for (const char* head : {"rh/score/l0h0", "rh/score/l0h1", "rh/score/l1h0", "rh/max_full"}) {
    EXPECT_GE(Get(m, head), -1.0) << head;
    EXPECT_LE(Get(m, head), 1.0) << head;
  }
  EXPECT_FALSE(m.count("rh/score/l2h0"));  // the L layer has no attention heads
}

TEST(EvaluatorTest, TooFewSamplesGiveNoRetrievalScore) {
  at::set_num_threads(1);
  CellConfig config = Cell(0, {{"rh_min_samples", 9}});
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);
  const std::map<std::string, double> m = evaluator.Run(model);
  EXPECT_EQ(Get(m, "rh/samples"), 8.0);
  EXPECT_FALSE(m.count("rh/max_full"));
  EXPECT_FALSE(m.count("rh/score/l0h0"));
}

// DecodeHeadline measures what Run reports, and hands out the answers it scored: per length,
// the share of answers equal to the task's is niah/acc@<L>.
TEST(EvaluatorTest, DecodeHeadlineScoresWhatRunReports) {
  at::set_num_threads(1);
  CellConfig config = Cell(0);
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);
  const std::map<std::string, double> all = evaluator.Run(model);
  Evaluator::Decoded decoded;
  const std::map<std::string, double> m = evaluator.DecodeHeadline(model, false, &decoded);
  EXPECT_EQ(Get(m, "niah/acc"), Get(all, "niah/acc"));
  ASSERT_EQ(decoded.answers.size(), evaluator.headline().size());
  for (size_t g = 0; g < evaluator.headline().size(); ++g) {
    const Evaluator::TaskGroup& group = evaluator.headline()[g];
    ASSERT_EQ(decoded.answers[g].size(), group.tasks.size());
    int right = 0;
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      right += decoded.answers[g][b] == group.tasks[b].answers[0];
    }
    const std::string name = "niah/acc@" + std::to_string(group.length);
    EXPECT_DOUBLE_EQ(static_cast<double>(right) / static_cast<double>(group.tasks.size()),
                     Get(all, name))
        << name;
  }
  EXPECT_TRUE(model->is_training());  // eval mode only while decoding
}

// A model whose every weight is zero predicts the same token whatever it is asked: asked
// another key of the same prompt, it never changes its answer.
TEST(EvaluatorTest, AModelThatIgnoresTheKeyHasAKeySwapRateOfOne) {
  at::set_num_threads(1);
  CellConfig config = Cell(0);
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  Transformer model(config.model);
  {
    torch::NoGradGuard no_grad;
    for (at::Tensor& p : model->parameters()) p.zero_();
  }
  const std::map<std::string, double> m = evaluator.Run(model);
  EXPECT_EQ(Get(m, "niah/control/key_swap_rate"), 1.0);
  EXPECT_EQ(Get(m, "niah/control/key_swap_rate@48"), 1.0);
}

// Every cell of a study is bucketed at the study's window: a full-attention cell reports
// niah/acc_beyond_window too, and no own-window buckets.
TEST(EvaluatorTest, FullAttentionCellsGetTheStudyWindowBuckets) {
  at::set_num_threads(1);
  CellConfig c;
  ASSERT_FALSE(ParseCellConfig(
      {{"model", {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 64}, {"arch", "full"}}},
       {"eval",
        {{"heldout_seqs", 0},
         {"niah_lengths", {64}},
         {"niah_depths", {0.1, 0.9}},
         {"niah_samples", 2},
         {"niah_window", 8}}}},
      &c));
  SyntheticData data(c.data, c.model.seq_len);
  Evaluator evaluator(c, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(c.model);
  const std::map<std::string, double> m = evaluator.Run(model);
  EXPECT_TRUE(m.count("niah/acc_beyond_window"));
  EXPECT_FALSE(m.count("niah/acc_beyond_own_window"));
  EXPECT_FALSE(m.count("eval/short_loss"));         // no held-out sequences asked for
  EXPECT_FALSE(m.count("niah/extrapolation/acc"));  // no length beyond seq_len
}

// The ablation masks heads of every mixer: F, S and L here. Heads are chosen on the selection
// half and measured on the test half; with K = 1 the top head's layer has one other head, so
// the same-mix draws all mask that one head and agree exactly.
TEST(EvaluatorTest, AblationMasksEveryMixerAndMeasuresOnTheOtherHalf) {
  at::set_num_threads(1);
  CellConfig config = Cell(1, {{"ablation_draws", 3}});
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);
  const std::map<std::string, double> m = evaluator.Ablation(model, 1);
  for (const char* head : {"l0h0", "l0h1", "l1h0", "l1h1", "l2h0", "l2h1"}) {
    EXPECT_TRUE(m.count(std::string("ablation/selection/drop/") + head)) << head;
  }
  EXPECT_GE(Get(m, "ablation/selection/niah_acc"), 0.0);
  EXPECT_GE(Get(m, "ablation/test/niah_acc"), 0.0);
  EXPECT_GE(Get(m, "ablation/top_k/niah_acc"), 0.0);
  EXPECT_EQ(Get(m, "ablation/top_k/heads"), 1.0);
  EXPECT_EQ(Get(m, "ablation/random_k/draws"), 3.0);
  EXPECT_EQ(Get(m, "ablation/random_k/niah_acc_std"), 0.0);
  EXPECT_EQ(Get(m, "ablation/full/heads"), 1.0);
  EXPECT_EQ(Get(m, "ablation/efficient/heads"), 1.0);
  // Unmasked, the test half scores what HeadlineAccuracy says, and the masks are lifted after.
  EXPECT_EQ(Get(m, "ablation/test/niah_acc"),
            evaluator.HeadlineAccuracy(model, Evaluator::Half::kTest, {}));
  const std::map<std::string, double> before = evaluator.Run(model);
  evaluator.Ablation(model, 1);
  EXPECT_EQ(evaluator.Run(model).at("niah/acc"), before.at("niah/acc"));
  EXPECT_FALSE(before.count("ablation/top_k/niah_acc"));  // not at an ordinary eval
  // Masking every head of every layer changes what the model answers: the halves are real
  // subsets of the prompts, and together they are all of them.
  const double all = evaluator.HeadlineAccuracy(model, Evaluator::Half::kAll, {});
  EXPECT_NEAR(all,
              (evaluator.HeadlineAccuracy(model, Evaluator::Half::kSelection, {}) +
               evaluator.HeadlineAccuracy(model, Evaluator::Half::kTest, {})) /
                  2,
              1e-12);
  EXPECT_EQ(all, before.at("niah/acc"));
}

// A 2-head DF hybrid: the top 2 heads by drop are often a whole layer, and then no draw can
// keep the mix: the baseline comes from the other heads and is named so.
TEST(EvaluatorTest, AblationOfATwoLayerHybridHasAnyMixBaselineWhenNeeded) {
  at::set_num_threads(1);
  CellConfig config = Cell(2, {{"ablation_draws", 2}}, "DF");
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);
  const std::map<std::string, double> m = evaluator.Ablation(model, 2);
  EXPECT_EQ(Get(m, "ablation/full/heads"), 2.0);
  EXPECT_EQ(Get(m, "ablation/efficient/heads"), 2.0);
  const int same = static_cast<int>(m.count("ablation/random_k/draws"));
  const int any = static_cast<int>(m.count("ablation/random_k_any_mix/draws"));
  EXPECT_EQ(same + any, 1);
}

}  // namespace
}  // namespace onset::model
