#include "model/nn/transformer.h"

#include <gtest/gtest.h>

#include <torch/utils.h>

#include "model/config/vocab.h"
#include "model/training/optimizer.h"

namespace onset::model {
namespace {

ModelConfig Tiny(const std::string& arch, const std::string& pos, int layers = 2, int window = 0) {
  CellConfig c;
  nlohmann::json m = {{"layers", layers}, {"d_model", 32}, {"heads", 2},
                      {"seq_len", 32},    {"arch", arch},  {"pos", pos}};
  if (window > 0) m["window"] = window;
  auto e = ParseCellConfig({{"model", m}}, &c);
  EXPECT_FALSE(e) << e->ToString();
  return c.model;
}

at::Tensor RandomTokens(int64_t B, int64_t T, int64_t seed) {
  torch::manual_seed(seed);
  return at::randint(0, kNumByteTokens, {B, T}, at::kLong);
}

TEST(TransformerTest, CountsParameters) {
  torch::manual_seed(0);
  Transformer tied(Tiny("full", "rope"));
  // Per layer: qkv 3*32*32 + out 32*32 + QK-norm 2*16 + two norms 2*32 + SwiGLU 3*32*96.
  const int64_t per_layer = 3072 + 1024 + 32 + 64 + 9216;
  EXPECT_EQ(tied->CountParams().non_embedding, 2 * per_layer + 32);
  EXPECT_EQ(tied->CountParams().embedding, kVocabSize * 32);
  ModelConfig untied_cfg = Tiny("full", "rope");
  untied_cfg.tie_embeddings = false;
  Transformer untied(untied_cfg);
  EXPECT_EQ(untied->CountParams().embedding, 2 * kVocabSize * 32);
  EXPECT_EQ(untied->CountParams().non_embedding, 2 * per_layer + 32);
  EXPECT_EQ(untied->CountParams().total, 2 * kVocabSize * 32 + 2 * per_layer + 32);
}

TEST(TransformerTest, LogitsHaveVocabShape) {
  torch::manual_seed(0);
  Transformer model(Tiny("swa", "nope-full", 4, 8));
  at::Tensor logits = model(RandomTokens(3, 20, 1));
  EXPECT_EQ(logits.sizes(), (at::IntArrayRef{3, 20, kVocabSize}));
  EXPECT_EQ(logits.scalar_type(), at::kFloat);
}

// One NoPE attention layer sees its keys as a set: the last output does not change when the
// earlier tokens are permuted. With RoPE it does.
TEST(TransformerTest, NopeIgnoresPosition) {
  at::Tensor tokens = RandomTokens(1, 12, 2);
  at::Tensor perm = at::cat({at::randperm(11, at::kLong), at::full({1}, 11, at::kLong)});
  at::Tensor shuffled = tokens.index_select(1, perm);
  for (const char* pos : {"nope", "rope"}) {
    torch::manual_seed(0);
    ModelConfig config = Tiny("full", pos, 1);
    config.init_std = 0.5;  // sharp attention, so position effects are far above rounding
    Transformer model(config);
    at::Tensor a = model(tokens).select(1, -1), b = model(shuffled).select(1, -1);
    EXPECT_EQ(at::allclose(a, b, 1e-4, 1e-5), std::string(pos) == "nope")
        << pos << " max diff " << (a - b).abs().max().item<float>();
    // Shifting every position: NoPE is bit-identical, RoPE equal up to rounding (relative).
    at::Tensor shifted = model(tokens, 1000);
    if (std::string(pos) == "nope") {
      EXPECT_TRUE(at::equal(model(tokens), shifted));
    } else {
      EXPECT_TRUE(at::allclose(model(tokens), shifted, 1e-3, 1e-3));
    }
  }
}

// Log-n scaling leaves positions below seq_len alone and sharpens NoPE queries beyond it,
// the same way in a full forward and in cached decoding.
TEST(TransformerTest, LognScalingActsOnlyBeyondTheTrainingLength) {
  at::Tensor tokens = RandomTokens(1, 48, 4);  // seq_len 32: 16 positions beyond
  torch::manual_seed(0);
  ModelConfig plain_config = Tiny("full", "nope", 1);
  Transformer plain(plain_config);
  ModelConfig scaled_config = plain_config;
  scaled_config.logn_scaling = kLognFull;
  torch::manual_seed(0);  // the same weights: the option adds none
  Transformer scaled(scaled_config);
  at::Tensor a = plain(tokens), b = scaled(tokens);  // (1, 48, V)
  EXPECT_TRUE(at::equal(a.narrow(1, 0, 32), b.narrow(1, 0, 32)));
  EXPECT_GT((a.narrow(1, 32, 16) - b.narrow(1, 32, 16)).abs().max().item<float>(), 1e-4);
  // Decoding position by position agrees with the full forward.
  std::vector<LayerCache> caches;
  at::Tensor prefill = scaled->Prefill(tokens.narrow(1, 0, 40), &caches);  // (1, 40, V)
  EXPECT_TRUE(at::allclose(prefill, b.narrow(1, 0, 40), 1e-4, 1e-4));
  for (int64_t p = 40; p < 48; ++p) {
    at::Tensor step = scaled->Step(tokens.narrow(1, p, 1), p, &caches);  // (1, 1, V)
    EXPECT_TRUE(at::allclose(step, b.narrow(1, p, 1), 1e-4, 1e-4)) << p;
  }
}

// "full" log-n scaling leaves NoPE S layers alone (they never see more than w keys); "all"
// scales them too.
TEST(TransformerTest, LognScalingFullSparesSlidingLayers) {
  at::Tensor tokens = RandomTokens(1, 48, 5);  // seq_len 32: 16 positions beyond
  ModelConfig plain_config = Tiny("S", "nope", 1, 8);
  torch::manual_seed(0);
  Transformer plain(plain_config);
  ModelConfig full_config = plain_config, all_config = plain_config;
  full_config.logn_scaling = kLognFull;
  all_config.logn_scaling = kLognAll;
  torch::manual_seed(0);
  Transformer full(full_config);
  torch::manual_seed(0);
  Transformer all(all_config);
  at::Tensor a = plain(tokens);
  EXPECT_TRUE(at::equal(a, full(tokens)));
  EXPECT_GT((a.narrow(1, 32, 16) - all(tokens).narrow(1, 32, 16)).abs().max().item<float>(), 1e-4);
}

// Two sliding-window layers with w = 4 see 2 * (4 - 1) = 6 positions back: changing token 0
// moves outputs 0..6 and nothing after.
TEST(TransformerTest, SlidingWindowLimitsTheReceptiveField) {
  torch::manual_seed(0);
  Transformer model(Tiny("SS", "rope", 2, 4));
  at::Tensor tokens = RandomTokens(1, 16, 3);
  at::Tensor other = tokens.clone();
  other[0][0] = (tokens[0][0].item<int64_t>() + 1) % kNumByteTokens;
  at::Tensor diff = (model(tokens) - model(other)).abs().amax({0, 2});  // (T)
  for (int i = 0; i < 16; ++i) EXPECT_EQ(diff[i].item<float>() > 1e-6, i <= 6) << i;
}

// forward, Prefill and Step are one walk through the model: on the same tokens, Prefill's
// logits are forward's (bit for bit where every mixer is attention, whose prefill is its
// forward; to float rounding with the chunked L and D prefill), and steps after a shorter
// prefill continue them.
TEST(TransformerTest, ForwardPrefillAndStepAgree) {
  torch::NoGradGuard no_grad;
  for (const std::string arch : {"F", "S", "FS", "SLDF"}) {
    torch::manual_seed(static_cast<int64_t>(arch.size()));
    Transformer model(Tiny(arch, "rope", static_cast<int>(arch.size()), 4));
    at::Tensor tokens = RandomTokens(2, 12, 6);  // 12 > window 4
    at::Tensor full = model(tokens);             // (2, 12, V)
    std::vector<LayerCache> caches;
    at::Tensor prefill = model->Prefill(tokens, &caches);  // (2, 12, V)
    ASSERT_EQ(caches.size(), arch.size());
    if (arch.find_first_of("LD") == std::string::npos) {
      EXPECT_TRUE(at::equal(prefill, full)) << arch;
    } else {
      EXPECT_TRUE(at::allclose(prefill, full, 1e-4, 1e-4)) << arch;
    }
    model->Prefill(tokens.narrow(1, 0, 8), &caches);  // (2, 8, V)
    for (int64_t p = 8; p < 12; ++p) {
      at::Tensor step = model->Step(tokens.narrow(1, p, 1), p, &caches);  // (2, 1, V)
      EXPECT_TRUE(at::allclose(step, full.narrow(1, p, 1), 1e-4, 1e-4)) << arch << " at " << p;
    }
  }
}

TEST(TransformerTest, NormGainsStartAtOne) {
  Transformer model(Tiny("full", "rope", 1));
  int gains = 0;
  for (const auto& p : model->named_parameters()) {
    if (p.key().find("norm") == std::string::npos) continue;
    ++gains;
    EXPECT_TRUE(at::equal(p.value(), at::ones_like(p.value()))) << p.key();
  }
  EXPECT_EQ(gains, 4);  // norm1, qk_norm_weight, norm2, norm_f
}

TEST(OptimizerTest, DecaysOnlyNonEmbeddingMatrices) {
  Transformer model(Tiny("full", "rope", 1));
  ParamGroups g = SplitForWeightDecay(*model);
  for (const std::string& n : g.decay_names) {
    EXPECT_EQ(n.find("norm"), std::string::npos) << n;
    EXPECT_EQ(n.find("wte"), std::string::npos) << n;
  }
  EXPECT_EQ(g.decay.size(), 4u);     // qkv, out, gate_up, down
  EXPECT_EQ(g.no_decay.size(), 5u);  // wte, norm1, norm2, qk_norm_weight, norm_f
}

}  // namespace
}  // namespace onset::model
