#include "coordinator/study/model_cost.h"

#include <gtest/gtest.h>

#include "model/config/cell_config.h"
#include "model/config/flops.h"

namespace onset::coordinator {
namespace {

std::string Config(const nlohmann::json& model) {
  model::CellConfig c;
  auto e = model::ParseCellConfig({{"model", model}}, &c);
  EXPECT_FALSE(e) << e->ToString();
  return c.CanonicalText();
}

TEST(ModelCostTest, SizesTheModelOfAStoredConfig) {
  const std::string text = Config({{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"arch", "full"}});
  const ModelCost cost = ModelCostOf(text);
  // Per layer: qkv 3*32*32 + out 32*32 + QK-norm 2*16 + two norms 2*32 + SwiGLU 3*32*96; and
  // the final norm.
  EXPECT_EQ(cost.non_embedding_params, 2 * (3072 + 1024 + 32 + 64 + 9216) + 32);
  model::CellConfig parsed;
  ASSERT_FALSE(model::ParseCellConfig(nlohmann::json::parse(text), &parsed));
  EXPECT_DOUBLE_EQ(cost.train_flops_per_token,
                   model::TrainFlopsPerToken(parsed.model, cost.non_embedding_params));
  // Remembered: the same answer again.
  EXPECT_EQ(ModelCostOf(text).non_embedding_params, cost.non_embedding_params);
  // Another model, another answer.
  const std::string gdn = Config({{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"arch", "gdn:1"}});
  EXPECT_NE(ModelCostOf(gdn).non_embedding_params, cost.non_embedding_params);
}

TEST(ModelCostTest, AConfigItCannotReadIsUnsized) {
  EXPECT_EQ(ModelCostOf("not json").non_embedding_params, 0);
  EXPECT_EQ(ModelCostOf(R"({"model": {"heads": 3, "d_model": 32}})").train_flops_per_token, 0);
}

}  // namespace
}  // namespace onset::coordinator
