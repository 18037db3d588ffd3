// Cached decoding against the full re-forward reference, and the head mask.
#include "model/evaluation/decoding.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <algorithm>
#include <string>

#include "model/config/vocab.h"

namespace onset::model {
namespace {

ModelConfig Tiny(const std::string& arch, int window, const std::string& pos = "rope",
                 const std::string& short_conv = "LD") {
  CellConfig c;
  nlohmann::json m = {{"layers", static_cast<int>(arch.size())},
                      {"d_model", 32},
                      {"heads", 4},
                      {"kv_heads", 2},
                      {"seq_len", 32},
                      {"arch", arch},
                      {"pos", pos},
                      {"chunk_size", 5},
                      {"short_conv", short_conv}};
  if (window > 0) m["window"] = window;
  auto e = ParseCellConfig({{"model", m}}, &c);
  EXPECT_FALSE(e) << e->ToString();
  c.model.init_std = 0.2;  // peaked logits: greedy choices far from ties
  return c.model;
}

at::Tensor Prompts(int64_t B, int64_t L, int64_t seed) {
  torch::manual_seed(seed);
  return at::randint(0, kNumByteTokens, {B, L}, at::kLong);  // (B, L)
}

// F, S with prompts longer than the window, L, D and hybrids, all with GQA (4 query heads on 2
// key/value heads) and RoPE, so positions must continue across prefill and steps; the short
// convolution on L and D (a study's default), on every layer, and on none, so its state must
// too.
TEST(DecodingTest, CachedEqualsFullReforward) {
  at::set_num_threads(1);
  torch::NoGradGuard no_grad;
  for (const std::string conv : {"LD", "FSLD", ""}) {
    for (const std::string arch : {"F", "S", "L", "D", "FF", "SLDF", "DSFS"}) {
      for (const std::string pos : {"rope", "nope"}) {
        if (conv != "LD" && pos == "nope") continue;
        torch::manual_seed(static_cast<int64_t>(arch.size()) * 7 + pos.size());
        Transformer model(Tiny(arch, arch.find('S') != std::string::npos ? 4 : 0, pos, conv));
        model->eval();
        at::Tensor prompts = Prompts(3, 13, arch.size());  // 13 > window 4 and > chunk 5
        at::Tensor ref_logits, got_logits;
        at::Tensor ref = GreedyDecode(model, prompts, 9, &ref_logits);
        at::Tensor got = CachedGreedyDecode(model, prompts, 9, &got_logits);
        EXPECT_TRUE(at::equal(ref, got)) << arch << " " << pos << " conv " << conv;
        ASSERT_EQ(got_logits.sizes(), (at::IntArrayRef{3, 9, kVocabSize}));
        // Within 1e-5 of the logits' scale: the chunked L/D prefill and the one-token steps sum
        // in different float32 orders (a wrong cache or position is off by O(1)).
        const float scale = std::max(1.0f, ref_logits.abs().max().item<float>());
        EXPECT_LT((ref_logits - got_logits).abs().max().item<float>(), 1e-5 * scale)
            << arch << " " << pos << " conv " << conv << " max diff "
            << (ref_logits - got_logits).abs().max().item<float>() << " max |logit| "
            << ref_logits.abs().max().item<float>();
      }
    }
  }
}

// The trace holds the argmax of each head's attention, as absolute positions: with a prompt
// of one repeated token and NoPE, every F-layer key is identical, so the probabilities tie and
// the argmax is position 0; an S layer with window 4 sees only the last 4 positions.
TEST(DecodingTest, TraceGivesAbsolutePositions) {
  at::set_num_threads(1);
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  Transformer model(Tiny("FS", 4, "nope"));
  model->eval();
  at::Tensor prompts = at::full({2, 10}, 7, at::kLong);  // (B, L)
  AttentionTrace trace;
  at::Tensor out = CachedGreedyDecode(model, prompts, 3, nullptr, &trace);
  ASSERT_EQ(trace.layers, (std::vector<int>{0, 1}));
  ASSERT_EQ(trace.top1.sizes(), (at::IntArrayRef{2, 3, 2, 4}));
  // Step 0 is the query at position 9 over positions 0..9 (F) and 6..9 (S).
  at::Tensor f = trace.top1.select(1, 0).select(1, 0);  // (B, H)
  at::Tensor s = trace.top1.select(1, 0).select(1, 1);  // (B, H)
  EXPECT_TRUE((f >= 0).all().item<bool>() && (f <= 9).all().item<bool>());
  EXPECT_TRUE((s >= 6).all().item<bool>() && (s <= 9).all().item<bool>());
  // Later steps can look at the generated positions, never beyond the current query.
  at::Tensor last = trace.top1.select(1, 2);  // (B, A, H)
  EXPECT_TRUE((last <= 11).all().item<bool>());
  EXPECT_TRUE((last.select(1, 1) >= 8).all().item<bool>());
}

TEST(DecodingTest, HeadMaskAllChangesNoneKeeps) {
  at::set_num_threads(1);
  torch::NoGradGuard no_grad;
  torch::manual_seed(2);
  Transformer model(Tiny("FSL", 4));
  model->eval();
  at::Tensor tokens = Prompts(2, 12, 5);
  at::Tensor base = model(tokens);  // (B, T, V)
  auto set_masks = [&](const at::Tensor& mask) {
    for (int i = 0; i < 2; ++i) {
      dynamic_cast<AttentionMixer&>(model->block(i)->mixer()).SetHeadMask(mask);
    }
  };
  set_masks(at::ones({4}));
  EXPECT_TRUE(at::equal(model(tokens), base));
  set_masks(at::zeros({4}));
  at::Tensor masked = model(tokens);
  EXPECT_GT((masked - base).abs().max().item<float>(), 1e-3);
  // Zeroing every attention head equals removing the attention layers' mixer output: the
  // cached path sees the same mask.
  at::Tensor got_logits, ref_logits;
  CachedGreedyDecode(model, tokens, 4, &got_logits);
  GreedyDecode(model, tokens, 4, &ref_logits);
  EXPECT_LT((got_logits - ref_logits).abs().max().item<float>(), 1e-5);
  set_masks(at::Tensor());
  EXPECT_TRUE(at::equal(model(tokens), base));
}

}  // namespace
}  // namespace onset::model
