// The evaluator's probe metrics on a tiny untrained hybrid: names, ranges and when they appear.
#include "model/evaluator.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

namespace onset::model {
namespace {

CellConfig Cell(int ablation_heads) {
  CellConfig c;
  auto e = ParseCellConfig(
      {{"model", {{"layers", 3}, {"d_model", 32}, {"heads", 2}, {"seq_len", 32}, {"arch", "FSL"},
                  {"window", 8}}},
       {"eval", {{"heldout_seqs", 2}, {"niah_lengths", {32, 48}}, {"niah_depths", {0.2, 0.8}},
                 {"niah_samples", 2}, {"ablation_heads", ablation_heads},
                 {"niah_variants", {"single", "multi-key", "multi-value", "multi-query"}}}}},
      &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

TEST(EvaluatorTest, ReportsRetrievalHeadsAndTheAblationAtTheFinalEval) {
  at::set_num_threads(1);
  CellConfig config = Cell(2);
  SyntheticData data(config.data, config.model.seq_len);
  Evaluator evaluator(config, data, at::kCPU);
  torch::manual_seed(0);
  Transformer model(config.model);

  std::map<std::string, double> m = evaluator.Run(model);
  for (const char* name : {"l0h0", "l0h1", "l1h0", "l1h1"}) {
    ASSERT_TRUE(m.count(std::string("rh/score/") + name)) << name;
    EXPECT_GE(m.at(std::string("rh/score/") + name), 0.0);
    EXPECT_LE(m.at(std::string("rh/score/") + name), 1.0);
  }
  EXPECT_FALSE(m.count("rh/score/l2h0"));  // the L layer has no attention heads
  EXPECT_DOUBLE_EQ(m.at("rh/max_full"), std::max(m.at("rh/score/l0h0"), m.at("rh/score/l0h1")));
  EXPECT_TRUE(m.count("rh/count_full") && m.count("rh/count_sliding"));
  EXPECT_TRUE(m.count("niah/acc@32") && m.count("niah/acc@48") && m.count("niah/acc"));
  // Accuracy by the needle's depth, over both lengths: the depths average to the whole.
  double depth_sum = 0;
  int depths = 0;
  for (const auto& [name, value] : m) {
    if (name.rfind("niah/acc_depth@", 0) != 0) continue;
    EXPECT_GE(value, 0.0);
    EXPECT_LE(value, 1.0);
    depth_sum += value;
    ++depths;
  }
  ASSERT_GT(depths, 0);
  EXPECT_NEAR(depth_sum / depths, m.at("niah/acc"), 1e-12);  // equal samples per depth
  for (const char* v : {"multi-key", "multi-value", "multi-query"}) {
    // 32 tokens cannot hold three records with room to spare (niah_tasks.h): left out.
    EXPECT_FALSE(m.count(std::string("niah/") + v + "/acc@32"));
    for (const char* at : {"/acc@48", "/acc"}) {
      const std::string name = std::string("niah/") + v + at;
      ASSERT_TRUE(m.count(name)) << name;
      EXPECT_GE(m.at(name), 0.0);
      EXPECT_LE(m.at(name), 1.0);
    }
  }
  EXPECT_FALSE(m.count("niah/single/acc"));  // the single variant keeps its own names
  EXPECT_GE(m.at("eval/niah_seconds"), 0.0);
  EXPECT_GE(m.at("eval/probe_seconds"), 0.0);
  EXPECT_FALSE(m.count("ablation/top_k/niah_acc"));  // only at the final eval

  std::map<std::string, double> last = evaluator.Run(model, false, /*final_eval=*/true);
  EXPECT_TRUE(last.count("ablation/top_k/niah_acc"));
  EXPECT_TRUE(last.count("ablation/random_k/niah_acc"));
  // The masks are lifted afterwards: the same model measures the same again.
  EXPECT_EQ(evaluator.Run(model).at("niah/acc"), m.at("niah/acc"));
  EXPECT_EQ(evaluator.Run(model).at("rh/max_full"), m.at("rh/max_full"));
}

}  // namespace
}  // namespace onset::model
