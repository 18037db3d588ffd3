#include "model/config/flops.h"

#include <gtest/gtest.h>

#include <torch/utils.h>

#include "model/nn/transformer.h"

namespace onset::model {
namespace {

ModelConfig Model(const std::string& arch, int window) {
  CellConfig c;
  nlohmann::json model = {
      {"layers", 4}, {"d_model", 64}, {"heads", 4}, {"seq_len", 256}, {"arch", arch}};
  if (window > 0) model["window"] = window;
  auto e = ParseCellConfig({{"model", model}}, &c);
  EXPECT_FALSE(e) << e->ToString();
  return c.model;
}

TEST(FlopsTest, FullAttentionCountsTheCausalHalf) {
  const ModelConfig m = Model("full", 0);
  // 6 (N + d V) + 4 layers * 12 d (T + 1) / 2, by hand.
  const double expected = 6.0 * (1000 + 64.0 * 264) + 4 * 12.0 * 64 * 128.5;
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(m, 1000), expected);
}

TEST(FlopsTest, SlidingWindowsCountOnlyTheWindow) {
  const ModelConfig full = Model("full", 0);
  const ModelConfig swa = Model("swa", 16);  // SSSF
  // S layer: queries 0..15 read i + 1 keys, the other 240 read 16.
  const double s_keys = (16 * 17 / 2.0 + 240.0 * 16) / 256.0;
  const double expected = 6.0 * (1000 + 64.0 * 264) + 3 * 12.0 * 64 * s_keys + 12.0 * 64 * 128.5;
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(swa, 1000), expected);
  EXPECT_LT(TrainFlopsPerToken(swa, 1000), TrainFlopsPerToken(full, 1000));
  // A window at least the context is full attention.
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(Model("swa", 256), 1000), TrainFlopsPerToken(full, 1000));
}

TEST(FlopsTest, RecurrentLayersCostAChunkAndAState) {
  const ModelConfig gdn = Model("gdn:1", 0);  // DF DF, chunk 64, head_dim 16
  const double expected =
      6.0 * (1000 + 64.0 * 264) + 2 * 12.0 * 64 * (32.5 + 32) + 2 * 12.0 * 64 * 128.5;
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(gdn, 1000), expected);
}

// Every mixer and option that changes the parameter set, in the real LibTorch model.
TEST(NonEmbeddingParamsTest, CountsWhatTheModelHasButItsEmbeddings) {
  struct Case {
    const char* what;
    nlohmann::json model;
  };
  const nlohmann::json base = {{"layers", 4}, {"d_model", 64}, {"heads", 4}, {"seq_len", 64}};
  auto with = [&base](nlohmann::json more) {
    nlohmann::json m = base;
    m.update(more);
    return m;
  };
  const Case cases[] = {
      {"F", with({{"arch", "full"}})},
      {"S", with({{"arch", "swa"}, {"window", 16}})},
      {"L", with({{"arch", "lightning"}})},
      {"D", with({{"arch", "gdn"}})},
      {"FSLD", with({{"arch", "FSLD"}, {"window", 16}})},
      {"GQA", with({{"arch", "swa"}, {"window", 16}, {"kv_heads", 2}})},
      {"untied", with({{"arch", "full"}, {"tie_embeddings", false}})},
      {"no QK-norm", with({{"arch", "swa"}, {"window", 16}, {"qk_norm", false}})},
      {"MLP width", with({{"arch", "gdn:1"}, {"mlp_hidden", 100}, {"d_model", 48}, {"heads", 3}})},
      {"short conv on L and D", with({{"arch", "FSLD"}, {"window", 16}, {"short_conv", true}})},
      {"short conv everywhere, kernel 3",
       with({{"arch", "FSLD"}, {"window", 16}, {"short_conv", "FSLD"}, {"short_conv_kernel", 3}})},
      {"short conv with GQA",
       with({{"arch", "swa"}, {"window", 16}, {"kv_heads", 2}, {"short_conv", "S"}})},
  };
  for (const Case& c : cases) {
    CellConfig config;
    auto e = ParseCellConfig({{"model", c.model}}, &config);
    ASSERT_FALSE(e) << c.what << ": " << e->ToString();
    torch::manual_seed(0);
    Transformer model(config.model);
    int64_t all = 0;
    for (const at::Tensor& p : model->parameters()) all += p.numel();
    const int64_t embeddings = (config.model.tie_embeddings ? 1 : 2) *
                               int64_t{config.model.vocab_size} * config.model.d_model;
    EXPECT_EQ(NonEmbeddingParams(config.model), all - embeddings) << c.what;
    EXPECT_EQ(NonEmbeddingParams(config.model), model->CountParams().non_embedding) << c.what;
  }
}

TEST(NonEmbeddingParamsTest, ByHand) {
  CellConfig c;
  ASSERT_FALSE(ParseCellConfig(
      {{"model", {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 32}}}}, &c));
  // Per layer: qkv 3*32*32 + out 32*32 + QK-norm 2*16 + two norms 2*32 + SwiGLU 3*32*96; and
  // the final norm.
  EXPECT_EQ(NonEmbeddingParams(c.model), 2 * (3072 + 1024 + 32 + 64 + 9216) + 32);
}

TEST(NonEmbeddingParamsTest, TheShortConvolutionAddsItsTapsByHand) {
  CellConfig with, without;
  const nlohmann::json model = {
      {"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 32}, {"arch", "gdn:1"}};
  ASSERT_FALSE(ParseCellConfig({{"model", model}}, &without));
  nlohmann::json on = model;
  on["short_conv"] = true;
  ASSERT_FALSE(ParseCellConfig({{"model", on}}, &with));
  // The D layer convolves q, k, v (3 * 32 channels) with 4 taps each; the F layer has none.
  EXPECT_EQ(NonEmbeddingParams(with.model) - NonEmbeddingParams(without.model), 3 * 32 * 4);
}

TEST(FlopsTest, KnowsThePeaksOfCommonGpus) {
  EXPECT_DOUBLE_EQ(*PeakBf16Flops("NVIDIA H200"), 989.4e12);
  EXPECT_DOUBLE_EQ(*PeakBf16Flops("NVIDIA H100 80GB HBM3"), 989.4e12);
  EXPECT_DOUBLE_EQ(*PeakBf16Flops("NVIDIA H100 PCIe"), 756e12);
  EXPECT_DOUBLE_EQ(*PeakBf16Flops("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(PeakBf16Flops("NVIDIA GeForce RTX 3090"), std::nullopt);
}

}  // namespace
}  // namespace onset::model
