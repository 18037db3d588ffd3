// The L and D kernels against their token-by-token references, their mixers and models.
#include "model/nn/linear_mixers.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/utils.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "model/config/vocab.h"
#include "model/nn/attention.h"
#include "model/nn/gated_delta_net.h"
#include "model/nn/linear_attention.h"

namespace onset::model {
namespace {

// Random kernel inputs. q, k: (B, H, T, K) with unit-norm keys; v: (B, H, T, V); g: (B, H, T)
// log-decays spanning strong (about -5) to weak (about -0.01) decay; beta: (B, H, T) in (0, 1).
struct Inputs {
  at::Tensor q, k, v, g, beta;
};

Inputs Random(int64_t T, int64_t seed, at::ScalarType dtype, int64_t B = 2, int64_t H = 3,
              int64_t K = 8, int64_t V = 6) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto opts = at::TensorOptions().dtype(dtype);
  Inputs x;
  x.q = at::randn({B, H, T, K}, gen, opts);
  x.k = at::randn({B, H, T, K}, gen, opts);
  x.k = x.k / x.k.norm(2, -1, true);
  x.v = at::randn({B, H, T, V}, gen, opts);
  x.g = at::log_sigmoid(at::randn({B, H, T}, gen, opts) * 2.0 + 2.0);
  x.beta = at::sigmoid(at::randn({B, H, T}, gen, opts));
  return x;
}

struct Tolerance {
  double rtol, atol;
};
// fp64 differs from the recurrence only by reassociation; fp32 by float rounding over <= 40 steps.
constexpr Tolerance kFp64{1e-9, 1e-11};
constexpr Tolerance kFp32{1e-4, 1e-5};

const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    // (T, chunk): chunks that divide T, that do not, chunk 1, chunk > T.
    {1, 4}, {7, 1}, {16, 4}, {16, 16}, {17, 4}, {23, 5}, {40, 16}, {12, 64}};

TEST(LinearAttentionTest, ChunkedEqualsRecurrent) {
  for (auto [dtype, tol] :
       {std::make_tuple(at::kDouble, kFp64), std::make_tuple(at::kFloat, kFp32)}) {
    for (auto [T, chunk] : kShapes) {
      Inputs x = Random(T, T * 31 + chunk, dtype);
      at::Tensor ref = DecayedLinearAttentionRecurrent(x.q, x.k, x.v, x.g);
      at::Tensor got = DecayedLinearAttentionChunked(x.q, x.k, x.v, x.g, chunk);
      EXPECT_EQ(got.sizes(), ref.sizes());
      EXPECT_TRUE(at::allclose(got, ref, tol.rtol, tol.atol))
          << dtype << " T=" << T << " chunk=" << chunk << " max diff "
          << (got - ref).abs().max().item<double>();
    }
  }
}

// The reference itself: without decay it is causal linear attention, o_i = sum_{j<=i} (q_i . k_j)
// v_j; with decay a_t the contribution of j to i is scaled by a_{j+1} ... a_i.
TEST(LinearAttentionTest, RecurrenceIsDecayedCausalLinearAttention) {
  Inputs x = Random(9, 3, at::kDouble);
  at::Tensor scores = at::matmul(x.q, x.k.transpose(-2, -1)).tril();  // (B, H, T, T)
  at::Tensor undecayed = DecayedLinearAttentionRecurrent(x.q, x.k, x.v, at::zeros_like(x.g));
  EXPECT_TRUE(at::allclose(undecayed, at::matmul(scores, x.v), 1e-12, 1e-12));
  at::Tensor g = at::full_like(x.g, std::log(0.5));
  at::Tensor i = at::arange(9, at::kDouble).unsqueeze(1),
             j = at::arange(9, at::kDouble).unsqueeze(0);
  at::Tensor decayed_scores = scores * at::pow(0.5, (i - j).clamp_min(0));  // (B, H, T, T)
  EXPECT_TRUE(at::allclose(DecayedLinearAttentionRecurrent(x.q, x.k, x.v, g),
                           at::matmul(decayed_scores, x.v), 1e-12, 1e-12));
}

TEST(GatedDeltaNetTest, ChunkedEqualsRecurrent) {
  for (auto [dtype, tol] :
       {std::make_tuple(at::kDouble, kFp64), std::make_tuple(at::kFloat, kFp32)}) {
    for (auto [T, chunk] : kShapes) {
      Inputs x = Random(T, T * 17 + chunk, dtype);
      at::Tensor ref = GatedDeltaNetRecurrent(x.q, x.k, x.v, x.g, x.beta);
      at::Tensor got = GatedDeltaNetChunked(x.q, x.k, x.v, x.g, x.beta, chunk);
      EXPECT_EQ(got.sizes(), ref.sizes());
      EXPECT_TRUE(at::allclose(got, ref, tol.rtol, tol.atol))
          << dtype << " T=" << T << " chunk=" << chunk << " max diff "
          << (got - ref).abs().max().item<double>();
    }
  }
}

// The reference itself: with beta = 1, no decay and one-hot keys, the delta rule overwrites the
// state row of the key, so o_t = sum_r q_t[r] (the latest value written under key r).
TEST(GatedDeltaNetTest, RecurrenceOverwritesTheValueOfARepeatedKey) {
  const int64_t T = 6, K = 3, V = 2;
  std::vector<int64_t> keys = {0, 1, 0, 2, 1, 0};
  at::Tensor k = at::zeros({1, 1, T, K}, at::kDouble);
  for (int64_t t = 0; t < T; ++t) k[0][0][t][keys[t]] = 1.0;
  at::Tensor v = at::randn({1, 1, T, V}, at::kDouble);
  at::Tensor q = at::randn({1, 1, T, K}, at::kDouble);
  at::Tensor ones = at::ones({1, 1, T}, at::kDouble);
  at::Tensor o = GatedDeltaNetRecurrent(q, k, v, at::zeros_like(ones), ones);  // (1, 1, T, V)
  for (int64_t t = 0; t < T; ++t) {
    at::Tensor expected = at::zeros({V}, at::kDouble);
    for (int64_t r = 0; r < K; ++r) {
      for (int64_t s = t; s >= 0; --s) {
        if (keys[s] == r) {
          expected += q[0][0][t][r] * v[0][0][s];
          break;
        }
      }
    }
    EXPECT_TRUE(at::allclose(o[0][0][t], expected, 1e-12, 1e-12)) << t;
  }
}

// Backward through the chunked forms equals backward through the recurrences (fp64).
TEST(LinearKernelsTest, GradientsMatchTheRecurrence) {
  for (bool delta : {false, true}) {
    for (auto [T, chunk] : std::vector<std::pair<int64_t, int64_t>>{{11, 4}, {12, 3}}) {
      Inputs x = Random(T, 7 * T + chunk, at::kDouble, 1, 2, 4, 3);
      auto grads = [&](bool chunked) {
        std::vector<at::Tensor> in = {x.q.clone().requires_grad_(), x.k.clone().requires_grad_(),
                                      x.v.clone().requires_grad_(), x.g.clone().requires_grad_(),
                                      x.beta.clone().requires_grad_()};
        at::Tensor y =
            delta ? (chunked ? GatedDeltaNetChunked(in[0], in[1], in[2], in[3], in[4], chunk)
                             : GatedDeltaNetRecurrent(in[0], in[1], in[2], in[3], in[4]))
                  : (chunked ? DecayedLinearAttentionChunked(in[0], in[1], in[2], in[3], chunk)
                             : DecayedLinearAttentionRecurrent(in[0], in[1], in[2], in[3]));
        (y * y).sum().backward();
        std::vector<at::Tensor> out;
        for (int i = 0; i < (delta ? 5 : 4); ++i) out.push_back(in[i].grad());
        return out;
      };
      std::vector<at::Tensor> got = grads(true), ref = grads(false);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(got[i].defined()) << i;
        EXPECT_GT(ref[i].abs().max().item<double>(), 1e-6) << "input " << i << " has no gradient";
        EXPECT_TRUE(at::allclose(got[i], ref[i], 1e-8, 1e-10))
            << (delta ? "D" : "L") << " input " << i << " T=" << T << " chunk=" << chunk;
      }
    }
  }
}

ModelConfig Tiny(const std::string& arch, int layers = 4, int chunk_size = 64, int kv_heads = 0,
                 int window = 0, int heads = 2) {
  CellConfig c;
  nlohmann::json m = {{"layers", layers},    {"d_model", 32}, {"heads", heads},
                      {"seq_len", 32},       {"arch", arch},  {"chunk_size", chunk_size},
                      {"kv_heads", kv_heads}};
  if (window > 0) m["window"] = window;
  auto e = ParseCellConfig({{"model", m}}, &c);
  EXPECT_FALSE(e) << e->ToString();
  return c.model;
}

// Mixer plumbing: the chunked path (chunk 5, not dividing T) equals the recurrent switch.
TEST(LinearMixersTest, ChunkedMixersEqualTheirRecurrentForm) {
  ModelConfig config = Tiny("LD", 2, 5);
  torch::manual_seed(0);
  at::Tensor x = at::randn({2, 13, 32});
  LinearAttentionMixer l(config, 4);
  GatedDeltaNetMixer d(config, 4);
  MixerContext ctx;
  at::Tensor l_chunked = l.Forward(x, ctx), d_chunked = d.Forward(x, ctx);
  l.use_recurrent = d.use_recurrent = true;
  EXPECT_TRUE(at::allclose(l.Forward(x, ctx), l_chunked, 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(d.Forward(x, ctx), d_chunked, 1e-4, 1e-5));
  EXPECT_GT(l_chunked.abs().max().item<float>(), 1e-4);
  EXPECT_GT(d_chunked.abs().max().item<float>(), 1e-4);
}

TEST(LinearMixersTest, ModelsAreCausalAndCountTheirParameters) {
  for (const char* arch : {"lightning", "gdn"}) {
    torch::manual_seed(0);
    ModelConfig config = Tiny(arch, 4, 8);
    config.short_conv = kShortConvRecurrent;  // the references' layout
    Transformer model(config);
    at::Tensor tokens = at::randint(0, kNumByteTokens, {1, 21}, at::kLong);
    at::Tensor other = tokens.clone();
    other[0][9] = (tokens[0][9].item<int64_t>() + 1) % kNumByteTokens;
    at::Tensor diff = (model(tokens) - model(other)).abs().amax({0, 2});  // (T)
    for (int i = 0; i < 21; ++i)
      EXPECT_EQ(diff[i].item<float>() > 1e-6, i >= 9) << arch << " " << i;
    // Per efficient layer: in 32 x (4*32 + heads * (1 or 2)), out 32*32, head norm 16, the
    // short convolution's 4 taps on 3*32 channels, block norms 2*32, SwiGLU 3*32*96. The F
    // layer as in transformer_test.
    const int64_t in = 32 * (4 * 32 + (std::string(arch) == "gdn" ? 4 : 2));
    const int64_t extra = std::string(arch) == "gdn" ? 4 : 0;  // a_log, dt_bias
    const int64_t efficient = in + 1024 + 16 + 3 * 32 * 4 + extra + 64 + 9216;
    const int64_t full = 3072 + 1024 + 32 + 64 + 9216;
    EXPECT_EQ(model->CountParams().non_embedding, 3 * efficient + full + 32) << arch;
  }
}

// Grouped-query attention equals per-head reference attention where query head h reads
// key/value head h / (H / G), rebuilt here from the mixer's own weights.
TEST(GqaTest, AttentionMixerEqualsPerHeadReference) {
  for (auto [kv_heads, window] : std::vector<std::pair<int, int>>{{1, 0}, {2, 0}, {2, 5}, {4, 3}}) {
    ModelConfig config = Tiny(window ? "S" : "F", 1, 64, kv_heads, window, /*heads=*/4);
    torch::manual_seed(kv_heads * 10 + window);
    AttentionMixer mixer(config, window, /*use_rope=*/true);
    const int64_t B = 2, T = 11, H = 4, G = kv_heads, D = 8;
    at::Tensor x = at::randn({B, T, 32});
    RopeTables rope = RopeTables::Make(3, T, D, 10000.0, at::kCPU);
    MixerContext ctx{&rope, {}};
    at::Tensor got = mixer.Forward(x, ctx);

    auto params = mixer.named_parameters();
    EXPECT_EQ(params["qkv.weight"].size(0), (H + 2 * G) * D);
    at::Tensor qkv = at::linear(x, params["qkv.weight"]);  // (B, T, (H + 2G) D)
    at::Tensor gains = params["qk_norm_weight"];           // (2, 1, D)
    auto heads = [&](int64_t from, int64_t n) {
      return qkv.narrow(2, from * D, n * D).view({B, T, n, D}).transpose(1, 2);  // (B, n, T, D)
    };
    auto norm = [&](const at::Tensor& t, int which) {
      at::Tensor r = t * at::rsqrt(t.pow(2).mean(-1, true) + kNormEps) * gains[which];
      return ApplyRope(r, rope);
    };
    at::Tensor q = norm(heads(0, H), 0), k = norm(heads(H, G), 1), v = heads(H + G, G);
    std::vector<at::Tensor> per_head;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kv = h / (H / G);
      per_head.push_back(ReferenceAttention(q.narrow(1, h, 1), k.narrow(1, kv, 1),
                                            v.narrow(1, kv, 1), window));  // (B, 1, T, D)
    }
    at::Tensor y = at::cat(per_head, 1).transpose(1, 2).reshape({B, T, H * D});  // (B, T, C)
    at::Tensor want = at::linear(y, params["out.weight"]);
    EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-5))
        << "G=" << G << " w=" << window << " max diff " << (got - want).abs().max().item<float>();
  }
}

// A hybrid with both recurrent mixers learns: memorising a fixed batch cuts the loss.
TEST(LinearMixersTest, TinyHybridTrains) {
  // One intra-op thread: on a shared 2-core machine more threads only contend (25x slower).
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  torch::manual_seed(0);
  Transformer model(Tiny("LDLF", 4, 8));
  at::Tensor tokens = at::randint(0, 32, {4, 33}, at::kLong);
  at::Tensor x = tokens.narrow(1, 0, 32), y = tokens.narrow(1, 1, 32);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-3));
  auto loss_of = [&] {
    at::Tensor logits = model(x);
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
  };
  const double first = loss_of().item<double>();
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    at::Tensor loss = loss_of();
    loss.backward();
    opt.step();
  }
  const double last = loss_of().item<double>();
  at::set_num_threads(threads);
  EXPECT_LT(last, 0.6 * first) << "first " << first << " last " << last;
}

}  // namespace
}  // namespace onset::model
