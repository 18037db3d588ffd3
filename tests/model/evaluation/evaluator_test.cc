// The evaluator's probe metrics on a tiny untrained hybrid: names, ranges and when they appear.
#include "model/evaluation/evaluator.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

namespace onset::model {
namespace {

CellConfig Cell(int ablation_heads, const nlohmann::json& eval_extra = nlohmann::json::object()) {
  CellConfig c;
  nlohmann::json eval = {{"heldout_seqs", 2},
                         {"niah_lengths", {32, 48}},
                         {"niah_depths", {0.2, 0.8}},
                         {"niah_samples", 2},
                         {"niah_records", 2},
                         {"ablation_heads", ablation_heads},
                         {"niah_variants", {"single", "multi-value", "multi-query"}}};
  for (const auto& [k, v] : eval_extra.items()) eval[k] = v;
  auto e = ParseCellConfig({{"model",
                             {{"layers", 3},
                              {"d_model", 32},
                              {"heads", 2},
                              {"seq_len", 32},
                              {"arch", "FSL"},
                              {"window", 8}}},
                            {"eval", eval}},
                           &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

double Get(const std::map<std::string, double>& m, const std::string& name) {
  EXPECT_TRUE(m.count(name)) << name;
  return m.count(name) ? m.at(name) : NAN;
}

TEST(EvaluatorTest, ReportsTheHeadlineItsControlBucketsAndVariants) {
  at::set_num_threads(1);
  CellConfig config = Cell(0);
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);
  const std::map<std::string, double> m = evaluator.Run(model);
  for (const char* name :
       {"niah/acc@32", "niah/acc@48", "niah/acc", "niah/control/distractor_copy_rate@32",
        "niah/control/distractor_copy_rate", "niah/single/acc", "niah/multi-value/acc",
        "niah/multi-query/acc@48"}) {
    EXPECT_GE(Get(m, name), 0.0) << name;
    EXPECT_LE(Get(m, name), 1.0) << name;
  }
  // Accuracy by the needle's depth, over both lengths: the depths average to the whole.
  EXPECT_NEAR((Get(m, "niah/acc_depth@0.2") + Get(m, "niah/acc_depth@0.8")) / 2, Get(m, "niah/acc"),
              1e-12);
  // The study window buckets (here the cell's own window, 8) and the own-window buckets.
  EXPECT_TRUE(m.count("niah/acc_in_window") || m.count("niah/acc_beyond_window"));
  EXPECT_TRUE(m.count("niah/acc_beyond_own_window"));
  EXPECT_EQ(m.count("niah/acc_beyond_window"), m.count("niah/acc_beyond_own_window"));
  EXPECT_GE(Get(m, "eval/niah_seconds"), 0.0);
  // With one attention layer of each kind the model has heads, so rh/samples is reported; an
  // untrained model answers next to nothing right, so scores appear only with right answers.
  const double samples = Get(m, "rh/samples");
  EXPECT_EQ(m.count("rh/max_full") == 1, samples > 0);
  EXPECT_EQ(m.count("rh/score/l0h0") == 1, samples > 0);
  EXPECT_FALSE(m.count("rh/score/l2h0"));  // the L layer has no attention heads
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
  EXPECT_FALSE(m.count("eval/short_loss"));  // no held-out sequences asked for
}

TEST(EvaluatorTest, AblationAtTheFinalEvalOnly) {
  at::set_num_threads(1);
  CellConfig config = Cell(1, {{"ablation_draws", 3}});
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);
  // Heads 0, 1 in the F layer, 2, 3 in the S layer: the top head is F head 1.
  const std::map<std::string, double> m = evaluator.Ablation(model, {0.1, 0.9, 0.2, 0.0}, 1);
  EXPECT_GE(Get(m, "ablation/top_k/niah_acc"), 0.0);
  EXPECT_EQ(Get(m, "ablation/random_k/draws"), 3.0);
  EXPECT_LE(Get(m, "ablation/random_k/niah_acc_min"), Get(m, "ablation/random_k/niah_acc_mean"));
  EXPECT_GE(Get(m, "ablation/random_k/niah_acc_max"), Get(m, "ablation/random_k/niah_acc_mean"));
  EXPECT_GE(Get(m, "ablation/random_k/niah_acc_std"), 0.0);
  // The only F head outside the top one is head 0: every draw masks it alone, so the draws
  // agree exactly.
  EXPECT_EQ(Get(m, "ablation/random_k/niah_acc_std"), 0.0);
  // The masks are lifted afterwards: the same model measures the same again.
  const std::map<std::string, double> before = evaluator.Run(model);
  evaluator.Ablation(model, {0.1, 0.9, 0.2, 0.0}, 1);
  EXPECT_EQ(evaluator.Run(model).at("niah/acc"), before.at("niah/acc"));
  EXPECT_FALSE(before.count("ablation/top_k/niah_acc"));  // not at an ordinary eval
}

}  // namespace
}  // namespace onset::model
