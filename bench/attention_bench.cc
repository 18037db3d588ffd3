// Times every attention backend (model/nn/attention_backend.h) on the same inputs, forward and
// forward+backward, and reports achieved TFLOP/s counted on in-window work only: a query at
// position i attends min(i + 1, w) keys, each costing 2 multiply-adds per head dimension in
// the forward (QK^T and PV); the backward is counted as 2.5x the forward (FlashAttention's
// convention), so forward+backward is 3.5x. LibTorch only, so it builds on a GPU node.
//
//   onset-attention-bench [--device cuda|cpu] [--dtype bf16|fp16|fp32] [--seq 4096,16384,32768]
//                         [--windows 128,512,2048] [--batch 1] [--heads 16] [--kv-heads 16]
//                         [--head-dim 128] [--backends custom,flash,sdpa-band,blocked,tiled]
//                         [--iters 10] [--out FILE.jsonl]
//   onset-attention-bench --check [--device cuda] [--backends ...] [--max-seq T]
//   onset-attention-bench --linear [--device cuda] [--dtype bf16] [--seq ...] [--heads 16]
//                         [--head-dim 128]
//
// --check compares every backend with the fp64 reference (model/nn/attention.h) on the cases of
// kernels/swa_check_cases.h (odd sizes, GQA, windows from 1 to none, windows and lengths that
// split the rows of a warp inside a tile), forward and gradients, in bf16, fp16 and fp32 where
// the backend takes them, with the outputs' NaNs counted; it exits 1 on any mismatch. It is the
// GPU correctness check of bench/gpu/run.sh on machines without GoogleTest (tests/kernels/
// holds the same checks as tests). --max-seq keeps the cases with T at most that (for the
// slower compute-sanitizer tools).
//
// --linear times the L and D mixers' chunkwise ATen forms (model/nn/linear_attention.h,
// model/nn/gated_delta_net.h; chunk 64) forward and forward+backward at the same shapes, next to
// the attention backends: the measurement that decides whether they need a kernel of their own.
//
// Prints one table; with --out writes one JSON object per measurement. A backend that fails
// (out of memory, unsupported) is reported as such and the rest go on.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kernels/swa_check_cases.h"
#include "model/nn/attention.h"
#include "model/nn/attention_backend.h"
#include "model/nn/gated_delta_net.h"
#include "model/nn/linear_attention.h"

namespace {

using onset::model::AttentionBackend;

std::vector<int64_t> Ints(const std::string& list) {
  std::vector<int64_t> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoll(item));
  return out;
}

std::vector<std::string> Words(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// Query-key pairs inside the causal window.
double Pairs(int64_t T, int64_t w) {
  if (w <= 0 || w >= T) return static_cast<double>(T) * (T + 1) / 2;
  return static_cast<double>(w) * (w + 1) / 2 + static_cast<double>(T - w) * w;
}

void Sync(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

// Median seconds of `iters` calls after 2 warm-up calls.
template <typename F>
double Median(const at::Device& device, int iters, F&& f) {
  for (int i = 0; i < 2; ++i) f();
  Sync(device);
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    Sync(device);
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double RelativeError(const at::Tensor& got, const at::Tensor& want) {
  return (got.to(at::kDouble) - want).abs().max().item<double>() /
         std::max(1.0, want.abs().max().item<double>());
}

// Returns the number of failed comparisons; cases longer than max_seq (when > 0) are left out.
int Check(const at::Device& device, const std::vector<std::string>& backends, int64_t max_seq) {
  using Case = onset::kernels::CheckCase;
  int failures = 0;
  for (const std::string& name : backends) {
    const auto backend = onset::model::ParseAttentionBackend(name);
    if (!backend) continue;
    if (auto why = onset::model::AttentionBackendUnavailable(*backend, device)) {
      std::printf("check %-10s skipped: %s\n", name.c_str(), why->c_str());
      continue;
    }
    for (at::ScalarType dtype : {at::kBFloat16, at::kHalf, at::kFloat}) {
      if (*backend == AttentionBackend::kFlash && dtype == at::kFloat) continue;
      if (*backend == AttentionBackend::kTiled && dtype != at::kFloat) continue;  // fp32 only
      const double tol = dtype == at::kBFloat16 ? 3e-2 : dtype == at::kHalf ? 5e-3 : 2e-4;
      for (const Case& c : onset::kernels::kCheckCases) {
        if (max_seq > 0 && c.T > max_seq) continue;
        at::manual_seed(11);
        auto opts = at::TensorOptions().device(device).dtype(dtype);
        at::Tensor q = at::randn({c.B, c.H, c.T, c.D}, opts).requires_grad_(true);
        at::Tensor k = at::randn({c.B, c.G, c.T, c.D}, opts).requires_grad_(true);
        at::Tensor v = at::randn({c.B, c.G, c.T, c.D}, opts).requires_grad_(true);
        at::Tensor grad = at::randn({c.B, c.H, c.T, c.D}, opts);
        std::string verdict;
        try {
          at::Tensor got = onset::model::Attention(q, k, v, c.window, *backend);
          auto got_grads = torch::autograd::grad({got}, {q, k, v}, {grad});
          const int64_t groups = c.H / c.G;
          at::Tensor q64 = q.detach().to(at::kDouble).requires_grad_(true);
          at::Tensor k64 = k.detach().to(at::kDouble).requires_grad_(true);
          at::Tensor v64 = v.detach().to(at::kDouble).requires_grad_(true);
          at::Tensor want =
              onset::model::ReferenceAttention(q64, onset::model::RepeatKv(k64, groups),
                                               onset::model::RepeatKv(v64, groups), c.window);
          auto want_grads = torch::autograd::grad({want}, {q64, k64, v64}, {grad.to(at::kDouble)});
          double worst = RelativeError(got, want) / tol;
          int64_t nans = at::isnan(got).sum().item<int64_t>();
          for (int i = 0; i < 3; ++i) {
            worst = std::max(worst, RelativeError(got_grads[i], want_grads[i]) / (2 * tol));
            nans += at::isnan(got_grads[i]).sum().item<int64_t>();
          }
          verdict = nans == 0 && worst < 1.0 ? "ok" : "FAIL";
          std::printf(
              "check %-10s %-9s B=%lld H=%lld G=%lld T=%lld D=%lld w=%lld: %s (error "
              "%.2f of tolerance, %lld NaN)\n",
              name.c_str(), c10::toString(dtype), static_cast<long long>(c.B),
              static_cast<long long>(c.H), static_cast<long long>(c.G), static_cast<long long>(c.T),
              static_cast<long long>(c.D), static_cast<long long>(c.window), verdict.c_str(), worst,
              static_cast<long long>(nans));
        } catch (const std::exception& e) {
          verdict = "FAIL";
          std::string what = e.what();
          std::printf("check %-10s %-9s T=%lld: FAIL: %s\n", name.c_str(), c10::toString(dtype),
                      static_cast<long long>(c.T), what.substr(0, what.find('\n')).c_str());
        }
        failures += verdict != "ok";
      }
    }
  }
  return failures;
}

void Linear(const at::Device& device, at::ScalarType dtype, const std::vector<int64_t>& seqs,
            int64_t batch, int64_t heads, int64_t head_dim, int iters) {
  std::printf("%-12s %6s %10s %12s %14s\n", "mixer", "T", "fwd ms", "fwd+bwd ms", "tokens/s (f+b)");
  for (int64_t T : seqs) {
    at::manual_seed(0);
    auto opts = at::TensorOptions().device(device).dtype(dtype);
    at::Tensor q = at::randn({batch, heads, T, head_dim}, opts).requires_grad_(true);
    at::Tensor k = at::randn({batch, heads, T, head_dim}, opts);
    k = (k / k.norm(2, -1, true)).detach().requires_grad_(true);
    at::Tensor v = at::randn({batch, heads, T, head_dim}, opts).requires_grad_(true);
    at::Tensor g =
        (at::log_sigmoid(at::randn({batch, heads, T}, opts)) / 16.0).requires_grad_(true);
    at::Tensor beta = at::sigmoid(at::randn({batch, heads, T}, opts)).requires_grad_(true);
    at::Tensor grad = at::randn({batch, heads, T, head_dim}, opts);
    struct Mixer {
      const char* name;
      std::function<at::Tensor()> run;
      std::vector<at::Tensor> inputs;
    };
    const Mixer mixers[] = {
        {"L chunked",
         [&] { return onset::model::DecayedLinearAttentionChunked(q, k, v, g, 64); },
         {q, k, v, g}},
        {"D chunked",
         [&] { return onset::model::GatedDeltaNetChunked(q, k, v, g, beta, 64); },
         {q, k, v, g, beta}},
    };
    for (const Mixer& m : mixers) {
      try {
        const double fwd = Median(device, iters, [&] {
          at::NoGradGuard no_grad;
          m.run();
        });
        const double both =
            Median(device, iters, [&] { torch::autograd::grad({m.run()}, m.inputs, {grad}); });
        std::printf("%-12s %6lld %10.3f %12.3f %14.0f\n", m.name, static_cast<long long>(T),
                    fwd * 1e3, both * 1e3, batch * T / both);
      } catch (const std::exception& e) {
        std::string what = e.what();
        std::printf("%-12s %6lld  failed: %s\n", m.name, static_cast<long long>(T),
                    what.substr(0, what.find('\n')).c_str());
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = torch::cuda::is_available() ? "cuda" : "cpu", dtype_name = "bf16";
  std::string seqs = "4096,16384,32768", windows = "128,512,2048", out_path;
  std::string backends = "custom,flash,sdpa-band,blocked,tiled";
  int64_t batch = 1, heads = 16, kv_heads = 16, head_dim = 128, iters = 10, max_seq = 0;
  bool check = false, linear = false;
  CLI::App app{"Times every attention backend, forward and forward+backward.",
               "onset-attention-bench"};
  app.add_flag("--check", check, "compare every backend with the fp64 reference instead");
  app.add_flag("--linear", linear, "time the L and D mixers' chunkwise forms instead");
  app.add_option("--device", device_name, "cuda or cpu")->capture_default_str();
  app.add_option("--dtype", dtype_name, "bf16, fp16 or fp32")->capture_default_str();
  app.add_option("--seq", seqs, "sequence lengths")->capture_default_str();
  app.add_option("--windows", windows, "attention windows")->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--heads", heads)->capture_default_str();
  app.add_option("--kv-heads", kv_heads)->capture_default_str();
  app.add_option("--head-dim", head_dim)->capture_default_str();
  app.add_option("--backends", backends)->capture_default_str();
  app.add_option("--iters", iters, "timed runs, of which the median is reported")
      ->capture_default_str();
  app.add_option("--max-seq", max_seq, "--check: only cases with T at most this (0: all)");
  app.add_option("--out", out_path, "also write one JSON object per measurement here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;  // --help, or a usage error
  }
  const at::Device device(device_name == "cuda" ? at::kCUDA : at::kCPU);
  const at::ScalarType dtype = dtype_name == "fp32"   ? at::kFloat
                               : dtype_name == "fp16" ? at::kHalf
                                                      : at::kBFloat16;
  if (check) {
    const int failures = Check(device, Words(backends), max_seq);
    std::printf("check: %d failed\n", failures);
    return failures == 0 ? 0 : 1;
  }
  if (linear) {
    Linear(device, dtype, Ints(seqs), batch, heads, head_dim, static_cast<int>(iters));
    return 0;
  }
  std::ofstream out;
  if (!out_path.empty()) out.open(out_path);
  const std::string gpu = device.is_cuda() ? "cuda" : "cpu";  // nvidia-smi names the GPU
  std::printf("attention, %s, %s, B=%lld H=%lld G=%lld D=%lld, median of %lld\n", gpu.c_str(),
              dtype_name.c_str(), static_cast<long long>(batch), static_cast<long long>(heads),
              static_cast<long long>(kv_heads), static_cast<long long>(head_dim),
              static_cast<long long>(iters));
  std::printf("%-10s %6s %5s %10s %8s %12s %8s\n", "backend", "T", "w", "fwd ms", "TFLOP/s",
              "fwd+bwd ms", "TFLOP/s");
  for (int64_t T : Ints(seqs)) {
    for (int64_t w : Ints(windows)) {
      at::manual_seed(0);
      auto opts = at::TensorOptions().device(device).dtype(dtype);
      at::Tensor q = at::randn({batch, heads, T, head_dim}, opts).requires_grad_(true);
      at::Tensor k = at::randn({batch, kv_heads, T, head_dim}, opts).requires_grad_(true);
      at::Tensor v = at::randn({batch, kv_heads, T, head_dim}, opts).requires_grad_(true);
      at::Tensor grad = at::randn({batch, heads, T, head_dim}, opts);
      const double fwd_flops = 4.0 * batch * heads * head_dim * Pairs(T, w);
      for (const std::string& name : Words(backends)) {
        const auto backend = onset::model::ParseAttentionBackend(name);
        std::string error;
        double fwd = 0, both = 0;
        if (!backend) {
          error = "unknown backend";
        } else if (auto why = onset::model::AttentionBackendUnavailable(*backend, device)) {
          error = *why;
        } else {
          try {
            fwd = Median(device, static_cast<int>(iters), [&] {
              at::NoGradGuard no_grad;
              onset::model::Attention(q, k, v, w, *backend);
            });
            both = Median(device, static_cast<int>(iters), [&] {
              at::Tensor y = onset::model::Attention(q, k, v, w, *backend);
              torch::autograd::grad({y}, {q, k, v}, {grad});
            });
          } catch (const std::exception& e) {
            error = e.what();
            error = error.substr(0, error.find('\n'));
          }
        }
        if (error.empty()) {
          std::printf("%-10s %6lld %5lld %10.3f %8.1f %12.3f %8.1f\n", name.c_str(),
                      static_cast<long long>(T), static_cast<long long>(w), fwd * 1e3,
                      fwd_flops / fwd / 1e12, both * 1e3, 3.5 * fwd_flops / both / 1e12);
        } else {
          std::printf("%-10s %6lld %5lld  %s\n", name.c_str(), static_cast<long long>(T),
                      static_cast<long long>(w), error.substr(0, 60).c_str());
        }
        if (out.is_open()) {
          out << "{\"backend\":\"" << name << "\",\"device\":\"" << gpu << "\",\"dtype\":\""
              << dtype_name << "\",\"B\":" << batch << ",\"H\":" << heads << ",\"G\":" << kv_heads
              << ",\"D\":" << head_dim << ",\"T\":" << T << ",\"window\":" << w
              << ",\"fwd_s\":" << fwd << ",\"fwd_bwd_s\":" << both << ",\"fwd_flops\":" << fwd_flops
              << ",\"error\":\"" << (error.empty() ? "" : "failed") << "\"}\n";
        }
      }
    }
  }
  return 0;
}
