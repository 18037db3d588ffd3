// Throughput of the trainer's pieces on this machine:
//   onset-model-bench [d_model] [arch] [window] [micro_batch] [threads] [--profile FILE]
//   onset-model-bench --sweep [d_model]   (the table of docs/cpu-benchmark.md, 1 thread)
// prints forward+backward tokens/s of a layers=4, seq_len=256 model, the time of each
// attention path (reference, band mask, blocked, full causal) on (micro_batch, 4, 256, D), and
// of the L and D kernels (chunkwise with chunk 64, and the token-by-token reference), and of
// greedy NIAH-style decoding: full re-forward reference against the cached decoder.
// arch takes every ModelConfig::arch value: swa, lightning, gdn, SSSF, LLLF, DDDF, ...
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/utils.h>

#include "model/config/vocab.h"
#include "model/evaluation/decoding.h"
#include "model/nn/attention.h"
#include "model/nn/gated_delta_net.h"
#include "model/nn/linear_attention.h"
#include "model/nn/transformer.h"

namespace {

// CPU seconds of this process per call: on a shared machine wall time mostly measures the
// neighbours. With one thread this is the single-core cost.
template <typename F>
double SecondsPerCall(F f, int reps) {
  f();  // warm up
  const std::clock_t t0 = std::clock();
  for (int i = 0; i < reps; ++i) f();
  return static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC / reps;
}

}  // namespace

struct ModelCase {
  std::string arch;
  int window = 0;
  int seq_len = 256;
  bool short_conv = false;  // model.short_conv: true (the L and D layers', a study's default)
};

// The 4-layer, 4-head model of a case; exits on a bad case.
onset::model::CellConfig CaseConfig(const ModelCase& c, int d_model, int batch_tokens) {
  using namespace onset::model;
  CellConfig cell;
  auto error = ParseCellConfig({{"model",
                                 {{"layers", 4},
                                  {"d_model", d_model},
                                  {"heads", 4},
                                  {"seq_len", c.seq_len},
                                  {"arch", c.arch},
                                  {"window", c.window},
                                  {"short_conv", c.short_conv}}},
                                {"train", {{"batch_tokens", std::max(batch_tokens, c.seq_len)}}}},
                               &cell);
  if (error) {
    std::fprintf(stderr, "%s\n", error->ToString().c_str());
    std::exit(2);
  }
  return cell;
}

// Forward+backward tokens per CPU-second of a 4-layer model with micro-batches of
// `batch_tokens` tokens.
double TrainTokensPerCpuSecond(const ModelCase& c, int d_model, int batch_tokens,
                               std::string* pattern) {
  using namespace onset::model;
  const CellConfig cell = CaseConfig(c, d_model, batch_tokens);
  *pattern = cell.model.pattern;
  torch::manual_seed(0);
  Transformer model(cell.model);
  const int64_t T = cell.model.seq_len;
  const int64_t B = std::max<int64_t>(1, batch_tokens / T);
  at::Tensor tokens = at::randint(0, kNumByteTokens, {B, T + 1}, at::kLong);  // (B, T+1)
  at::Tensor x = tokens.narrow(1, 0, T), y = tokens.narrow(1, 1, T);          // (B, T)
  auto step = [&] {
    at::Tensor logits = model(x);  // (B, T, V)
    at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), y.reshape({-1})).backward();
  };
  return static_cast<double>(B * T) / SecondsPerCall(step, 3);
}

// The train-step table of docs/cpu-benchmark.md: mixers x windows x sequence lengths.
int Sweep(int d_model, int batch_tokens) {
  std::printf(
      "| arch | pattern | window | short conv | seq_len | tokens/CPU-s |\n"
      "|---|---|---|---|---|---|\n");
  for (int seq_len : {256, 1024, 4096}) {
    std::vector<ModelCase> cases = {{"full", 0, seq_len},
                                    {"swa", 32, seq_len},
                                    {"swa", 128, seq_len},
                                    {"lightning", 0, seq_len},
                                    {"lightning", 0, seq_len, true},
                                    {"gdn", 0, seq_len},
                                    {"gdn", 0, seq_len, true}};
    for (const ModelCase& c : cases) {
      std::string pattern;
      const double tps = TrainTokensPerCpuSecond(c, d_model, batch_tokens, &pattern);
      std::printf("| %s | %s | %s | %s | %d | %.0f |\n", c.arch.c_str(), pattern.c_str(),
                  c.window ? std::to_string(c.window).c_str() : "-", c.short_conv ? "yes" : "-",
                  seq_len, tps);
      std::fflush(stdout);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  using namespace onset::model;
  if (argc > 1 && std::string(argv[1]) == "--sweep") {
    at::set_num_threads(1);
    const int d_model = argc > 2 ? std::atoi(argv[2]) : 64;
    return Sweep(d_model, /*batch_tokens=*/4096);
  }
  const int d_model = argc > 1 ? std::atoi(argv[1]) : 64;
  const std::string arch = argc > 2 ? argv[2] : "swa";
  const int window = argc > 3 ? std::atoi(argv[3]) : 32;
  const int micro_batch = argc > 4 ? std::atoi(argv[4]) : 16;
  const int threads = argc > 5 ? std::atoi(argv[5]) : 1;
  const std::string profile = argc > 7 && std::string(argv[6]) == "--profile" ? argv[7] : "";
  at::set_num_threads(threads);

  const int64_t T = 256;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> prof;
  if (!profile.empty()) prof = std::make_unique<torch::autograd::profiler::RecordProfile>(profile);
  std::string pattern;
  const double tps = TrainTokensPerCpuSecond({arch, window, static_cast<int>(T)}, d_model,
                                             micro_batch * static_cast<int>(T), &pattern);
  prof.reset();
  std::printf(
      "model d_model=%d arch=%s (%s) window=%d micro_batch=%d threads=%d: "
      "%.0f tokens per CPU-second forward+backward (%.1f CPU-ms per micro-batch)\n",
      d_model, arch.c_str(), pattern.c_str(), window, micro_batch, threads, tps,
      1e3 * micro_batch * T / tps);

  const int64_t D = d_model / 4;
  at::Tensor q = at::randn({micro_batch, 4, T, D}), k = at::randn_like(q), v = at::randn_like(q);
  torch::NoGradGuard no_grad;
  std::printf(
      "attention (%d, 4, %lld, %lld) w=%d forward, CPU-ms: reference %.2f  band %.2f  "
      "blocked %.2f  full-causal %.2f\n",
      micro_batch, static_cast<long long>(T), static_cast<long long>(D), window,
      1e3 * SecondsPerCall([&] { ReferenceAttention(q, k, v, window); }, 10),
      1e3 * SecondsPerCall([&] { BandMaskAttention(q, k, v, window); }, 10),
      1e3 * SecondsPerCall([&] { BlockedSlidingWindowAttention(q, k, v, window); }, 10),
      1e3 * SecondsPerCall([&] { FullCausalAttention(q, k, v); }, 10));
  at::Tensor kn = k / k.norm(2, -1, true);                                // (B, 4, T, D)
  at::Tensor g = at::log_sigmoid(at::randn({micro_batch, 4, T})) / 16.0;  // (B, 4, T)
  at::Tensor beta = at::sigmoid(at::randn({micro_batch, 4, T}));          // (B, 4, T)
  std::printf(
      "linear kernels (%d, 4, %lld, %lld) forward, CPU-ms: L chunked %.2f  "
      "L recurrent %.2f  D chunked %.2f  D recurrent %.2f\n",
      micro_batch, static_cast<long long>(T), static_cast<long long>(D),
      1e3 * SecondsPerCall([&] { DecayedLinearAttentionChunked(q, kn, v, g, 64); }, 10),
      1e3 * SecondsPerCall([&] { DecayedLinearAttentionRecurrent(q, kn, v, g); }, 3),
      1e3 * SecondsPerCall([&] { GatedDeltaNetChunked(q, kn, v, g, beta, 64); }, 10),
      1e3 * SecondsPerCall([&] { GatedDeltaNetRecurrent(q, kn, v, g, beta); }, 3));
  // A NIAH probe's shape: prompts of 2 * seq_len, a few value tokens, with the head trace.
  torch::manual_seed(0);
  Transformer model(
      CaseConfig({arch, window, static_cast<int>(T)}, d_model, micro_batch * static_cast<int>(T))
          .model);
  constexpr int kSteps = 8;
  at::Tensor prompts = at::randint(0, kNumByteTokens, {micro_batch, 2 * T}, at::kLong);  // (B, 2T)
  AttentionTrace trace;
  std::printf(
      "greedy decode of %d tokens after (%d, %lld) prompts, CPU-ms: full re-forward "
      "%.1f  cached %.1f  cached with trace %.1f\n",
      kSteps, micro_batch, static_cast<long long>(2 * T),
      1e3 * SecondsPerCall([&] { GreedyDecode(model, prompts, kSteps); }, 2),
      1e3 * SecondsPerCall([&] { CachedGreedyDecode(model, prompts, kSteps); }, 2),
      1e3 *
          SecondsPerCall([&] { CachedGreedyDecode(model, prompts, kSteps, nullptr, &trace); }, 2));
  return 0;
}
