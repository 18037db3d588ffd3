#include "model/nn/fused_cpu_ops.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <atomic>
#include <cmath>
#include <vector>

#include "model/nn/cpu_vector.h"

namespace onset::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::atomic<bool> g_fused{true};

// Rows per task of at::parallel_for: a row is one vector of D (or F) floats.
constexpr int64_t kGrainRows = 256;

bool TakesFused(const at::Tensor& x) {
  return g_fused.load(std::memory_order_relaxed) && x.device().is_cpu() &&
         x.scalar_type() == at::kFloat;
}

// Sums over rows of per-row contributions to one accumulator of `size` floats, without two
// threads adding into one float: each thread adds its rows into a copy of its own, then the
// copies are summed. add(acc, begin, end) adds rows [begin, end) into acc. -> (size).
template <typename AddRows>
at::Tensor SumOverRows(int64_t rows, int64_t size, const at::TensorOptions& options,
                       const AddRows& add) {
  const int threads = at::get_num_threads();
  at::Tensor partial = at::zeros({threads, size}, options);  // (threads, size)
  float* pp = partial.mutable_data_ptr<float>();
  at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
    add(pp + static_cast<int64_t>(at::get_thread_num()) * size, begin, end);
  });
  return partial.sum(0);  // (size)
}

// ---- RMSNorm -------------------------------------------------------------------------------

// Weight rows: 0 for none (an empty tensor: autograd functions take no undefined inputs), 1 for
// (D), R for (R, D).
int64_t WeightRows(const at::Tensor& weight) {
  if (weight.numel() == 0) return 0;
  return weight.dim() == 1 ? 1 : weight.size(0);
}

struct RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
  // x (..., D) contiguous; weight empty, (D) or (R, D) contiguous -> (..., D).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            double eps) {
    const int64_t D = x.size(-1), rows = D == 0 ? 0 : x.numel() / D, R = WeightRows(weight);
    at::Tensor y = at::empty_like(x);                  // (..., D)
    at::Tensor rstd = at::empty({rows}, x.options());  // (rows)
    const float* xp = x.const_data_ptr<float>();
    const float* wp = R > 0 ? weight.const_data_ptr<float>() : nullptr;
    float* yp = y.mutable_data_ptr<float>();
    float* sp = rstd.mutable_data_ptr<float>();
    const float feps = static_cast<float>(eps);
    at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xp + r * D;
        float ss = 0;
#pragma omp simd reduction(+ : ss)
        for (int64_t i = 0; i < D; ++i) ss += xr[i] * xr[i];
        const float s = 1.0f / std::sqrt(ss / static_cast<float>(D) + feps);
        sp[r] = s;
        float* yr = yp + r * D;
        if (wp != nullptr) {
          const float* wr = wp + (r % R) * D;
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) yr[i] = xr[i] * s * wr[i];
        } else {
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) yr[i] = xr[i] * s;
        }
      }
    });
    ctx->save_for_backward({x, weight, rstd});
    return y;
  }

  // dx_j = s g_j - x_j s^3 / D * sum_i g_i x_i with g = dy * w; dw = sum over rows of dy x s.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& rstd = saved[2];
    const at::Tensor dy = grads[0].contiguous();
    const int64_t D = x.size(-1), rows = D == 0 ? 0 : x.numel() / D, R = WeightRows(weight);
    at::Tensor dx = at::empty_like(x);
    const float* xp = x.const_data_ptr<float>();
    const float* wp = R > 0 ? weight.const_data_ptr<float>() : nullptr;
    const float* sp = rstd.const_data_ptr<float>();
    const float* gp = dy.const_data_ptr<float>();
    float* dxp = dx.mutable_data_ptr<float>();
    const float inv_d = 1.0f / static_cast<float>(D);
    at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xp + r * D;
        const float* gr = gp + r * D;
        const float* wr = wp != nullptr ? wp + (r % R) * D : nullptr;
        const float s = sp[r];
        float dot = 0;
        if (wr != nullptr) {
#pragma omp simd reduction(+ : dot)
          for (int64_t i = 0; i < D; ++i) dot += gr[i] * wr[i] * xr[i];
        } else {
#pragma omp simd reduction(+ : dot)
          for (int64_t i = 0; i < D; ++i) dot += gr[i] * xr[i];
        }
        const float c = dot * s * s * s * inv_d;
        float* dr = dxp + r * D;
        if (wr != nullptr) {
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) dr[i] = s * gr[i] * wr[i] - xr[i] * c;
        } else {
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) dr[i] = s * gr[i] - xr[i] * c;
        }
      }
    });
    at::Tensor dw;
    if (R > 0) {
      dw = SumOverRows(rows, R * D, x.options(), [&](float* acc, int64_t begin, int64_t end) {
             for (int64_t r = begin; r < end; ++r) {
               const float* xr = xp + r * D;
               const float* gr = gp + r * D;
               float* ar = acc + (r % R) * D;
               const float s = sp[r];
#pragma omp simd
               for (int64_t i = 0; i < D; ++i) ar[i] += gr[i] * xr[i] * s;
             }
           }).view(weight.sizes());  // weight's shape
    }
    return {dx, dw, at::Tensor()};
  }
};

// ---- RoPE ----------------------------------------------------------------------------------

// y1 = x1 c - x2 s, y2 = x1 s + x2 c over rows of x (B, T, N, D) contiguous; `inverse` applies
// the transpose (the backward: x1 = y1 c + y2 s, x2 = y2 c - y1 s).
void RotateRows(const float* in, const float* cos, const float* sin, int64_t rows, int64_t T,
                int64_t N, int64_t D, bool inverse, float* out) {
  const int64_t h = D / 2;
  at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t t = (r / N) % T;
      const float* c = cos + t * h;
      const float* s = sin + t * h;
      const float* a = in + r * D;
      float* o = out + r * D;
      if (!inverse) {
#pragma omp simd
        for (int64_t p = 0; p < h; ++p) {
          o[p] = a[p] * c[p] - a[p + h] * s[p];
          o[p + h] = a[p] * s[p] + a[p + h] * c[p];
        }
      } else {
#pragma omp simd
        for (int64_t p = 0; p < h; ++p) {
          o[p] = a[p] * c[p] + a[p + h] * s[p];
          o[p + h] = a[p + h] * c[p] - a[p] * s[p];
        }
      }
    }
  });
}

struct RopeFunction : public torch::autograd::Function<RopeFunction> {
  // x (B, T, N, D) contiguous; cos, sin (T, D/2) contiguous float -> (B, T, N, D).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin) {
    at::Tensor y = at::empty_like(x);
    const int64_t T = x.size(1), N = x.size(2), D = x.size(3);
    RotateRows(x.const_data_ptr<float>(), cos.const_data_ptr<float>(), sin.const_data_ptr<float>(),
               x.numel() / std::max<int64_t>(1, D), T, N, D,
               /*inverse=*/false, y.mutable_data_ptr<float>());
    ctx->save_for_backward({cos, sin});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor dy = grads[0].contiguous();
    const int64_t T = dy.size(1), N = dy.size(2), D = dy.size(3);  // dy (B, T, N, D)
    at::Tensor dx = at::empty_like(dy);
    RotateRows(dy.const_data_ptr<float>(), saved[0].const_data_ptr<float>(),
               saved[1].const_data_ptr<float>(), dy.numel() / std::max<int64_t>(1, D), T, N, D,
               /*inverse=*/true, dx.mutable_data_ptr<float>());
    return {dx, at::Tensor(), at::Tensor()};
  }
};

// ---- SiLU and SwiGLU rows, built per CPU (cpu_vector.h) ------------------------------------

// s = sigmoid(pre), y = pre * s over n floats.
ONSET_SIMD_CLONES void SiluRows(const float* pre, float* s, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float si = 1.0f / (1.0f + FastExp(-pre[i]));
    s[i] = si;
    y[i] = pre[i] * si;
  }
}

// Rows of gate_up (2F: the gate, then up): s = sigmoid(gate), h = gate * s * up.
ONSET_SIMD_CLONES void SwiGluRows(const float* gate_up, float* s, float* h, int64_t rows,
                                  int64_t F) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = gate_up + r * 2 * F;
    float* sr = s + r * F;
    float* o = h + r * F;
#pragma omp simd
    for (int64_t i = 0; i < F; ++i) {
      const float si = 1.0f / (1.0f + FastExp(-g[i]));
      sr[i] = si;
      o[i] = g[i] * si * g[F + i];
    }
  }
}

// d gate = dh up s (1 + g (1 - s)), d up = dh g s.
ONSET_SIMD_CLONES void SwiGluBackwardRows(const float* gate_up, const float* s, const float* dh,
                                          float* dgu, int64_t rows, int64_t F) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = gate_up + r * 2 * F;
    const float* sr = s + r * F;
    const float* d = dh + r * F;
    float* o = dgu + r * 2 * F;
#pragma omp simd
    for (int64_t i = 0; i < F; ++i) {
      o[i] = d[i] * g[F + i] * sr[i] * (1.0f + g[i] * (1.0f - sr[i]));
      o[F + i] = d[i] * g[i] * sr[i];
    }
  }
}

// ---- Short convolution + SiLU --------------------------------------------------------------

struct ShortConvSiluFunction : public torch::autograd::Function<ShortConvSiluFunction> {
  // x (B, T, C) contiguous, weight (C, K) contiguous -> (B, T, C). pre = the convolution,
  // s = sigmoid(pre), y = pre * s.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), K = weight.size(1);
    at::Tensor pre = at::empty_like(x);  // (B, T, C)
    const float* xp = x.const_data_ptr<float>();
    const float* wp = weight.const_data_ptr<float>();
    float* pp = pre.mutable_data_ptr<float>();
    at::parallel_for(0, B * T, kGrainRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t t = r % T;
        float* o = pp + r * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) o[c] = 0;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t lag = K - 1 - j;  // tap j reads position t - lag
          if (lag > t) continue;
          const float* in = xp + (r - lag) * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) o[c] += wp[c * K + j] * in[c];
        }
      }
    });
    at::Tensor s = at::empty_like(x);  // (B, T, C) sigmoid(pre)
    at::Tensor y = at::empty_like(x);  // (B, T, C)
    float* sp = s.mutable_data_ptr<float>();
    float* yp = y.mutable_data_ptr<float>();
    at::parallel_for(0, B * T, kGrainRows, [&](int64_t begin, int64_t end) {
      SiluRows(pp + begin * C, sp + begin * C, yp + begin * C, (end - begin) * C);
    });
    ctx->save_for_backward({x, weight, pre, s});
    return y;
  }

  // d pre = dy s (1 + pre (1 - s)); dx[t] = sum_j w[., j] d pre[t + lag_j];
  // dw[., j] = sum over (b, t) of d pre[t] x[t - lag_j].
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& pre = saved[2];
    const at::Tensor& s = saved[3];
    const at::Tensor dy = grads[0].contiguous();
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), K = weight.size(1);
    at::Tensor dpre = at::empty_like(x);  // (B, T, C)
    {
      const float* gp = dy.const_data_ptr<float>();
      const float* pp = pre.const_data_ptr<float>();
      const float* sp = s.const_data_ptr<float>();
      float* dp = dpre.mutable_data_ptr<float>();
      at::parallel_for(0, B * T * C, kGrainRows * C, [&](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) {
          dp[i] = gp[i] * sp[i] * (1.0f + pp[i] * (1.0f - sp[i]));
        }
      });
    }
    const float* xp = x.const_data_ptr<float>();
    const float* wp = weight.const_data_ptr<float>();
    const float* dp = dpre.const_data_ptr<float>();
    at::Tensor dx = at::empty_like(x);  // (B, T, C)
    float* dxp = dx.mutable_data_ptr<float>();
    at::parallel_for(0, B * T, kGrainRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t t = r % T;
        float* o = dxp + r * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) o[c] = 0;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t lag = K - 1 - j;  // position t feeds t + lag through tap j
          if (t + lag >= T) continue;
          const float* d = dp + (r + lag) * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) o[c] += wp[c * K + j] * d[c];
        }
      }
    });
    // dw: the rows' sums as (K, C), transposed.
    at::Tensor sums =
        SumOverRows(B * T, K * C, x.options(), [&](float* acc, int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const int64_t t = r % T;
            const float* d = dp + r * C;
            for (int64_t j = 0; j < K; ++j) {
              const int64_t lag = K - 1 - j;
              if (lag > t) continue;
              const float* in = xp + (r - lag) * C;
              float* a = acc + j * C;
#pragma omp simd
              for (int64_t c = 0; c < C; ++c) a[c] += d[c] * in[c];
            }
          }
        });
    at::Tensor dw = sums.view({K, C}).transpose(0, 1).contiguous();  // (C, K)
    return {dx, dw};
  }
};

// ---- SwiGLU --------------------------------------------------------------------------------

struct SwiGluFunction : public torch::autograd::Function<SwiGluFunction> {
  // gate_up (rows, 2F) contiguous -> (rows, F): silu(gate) * up in one pass, the gate's
  // sigmoid kept for the backward.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_up) {
    const int64_t rows = gate_up.size(0), F = gate_up.size(1) / 2;
    at::Tensor sig = at::empty({rows, F}, gate_up.options());  // (rows, F)
    at::Tensor h = at::empty({rows, F}, gate_up.options());    // (rows, F)
    const float* gu = gate_up.const_data_ptr<float>();
    float* sp = sig.mutable_data_ptr<float>();
    float* hp = h.mutable_data_ptr<float>();
    at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
      SwiGluRows(gu + begin * 2 * F, sp + begin * F, hp + begin * F, end - begin, F);
    });
    ctx->save_for_backward({gate_up, sig});
    return h;
  }

  // d gate = dh up s (1 + g (1 - s)), d up = dh g s.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& gate_up = saved[0];
    const at::Tensor& sig = saved[1];
    const at::Tensor dh = grads[0].contiguous();
    const int64_t rows = gate_up.size(0), F = gate_up.size(1) / 2;
    at::Tensor dgu = at::empty_like(gate_up);  // (rows, 2F)
    const float* gu = gate_up.const_data_ptr<float>();
    const float* sp = sig.const_data_ptr<float>();
    const float* dp = dh.const_data_ptr<float>();
    float* op = dgu.mutable_data_ptr<float>();
    at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
      SwiGluBackwardRows(gu + begin * 2 * F, sp + begin * F, dp + begin * F, op + begin * 2 * F,
                         end - begin, F);
    });
    return {dgu};
  }
};

}  // namespace

void SetFusedCpuOps(bool on) { g_fused.store(on, std::memory_order_relaxed); }
bool FusedCpuOps() { return g_fused.load(std::memory_order_relaxed); }

at::Tensor CompositeRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const int64_t D = x.size(-1);
  if (!weight.defined()) return at::rms_norm(x, {D}, std::nullopt, eps);  // (..., D)
  if (weight.dim() == 1) return at::rms_norm(x, {D}, weight.to(x.scalar_type()), eps);
  return at::rms_norm(x, {D}, std::nullopt, eps) * weight.to(x.scalar_type());  // (..., R, D)
}

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == x.size(-1)) ||
                  (weight.dim() == 2 && x.dim() >= 2 && weight.size(0) == x.size(-2) &&
                   weight.size(1) == x.size(-1)),
              "RmsNorm: weight ", weight.defined() ? weight.sizes() : at::IntArrayRef{},
              " does not fit x ", x.sizes());
  if (!TakesFused(x) || (weight.defined() && weight.scalar_type() != at::kFloat)) {
    return CompositeRmsNorm(x, weight, eps);
  }
  return RmsNormFunction::apply(
      x.contiguous(), weight.defined() ? weight.contiguous() : at::empty({0}, x.options()), eps);
}

at::Tensor CompositeRopeBTND(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t T = x.size(1), half = x.size(-1) / 2;
  at::Tensor c = cos.to(x.scalar_type()).view({T, 1, half});  // (T, 1, D/2)
  at::Tensor s = sin.to(x.scalar_type()).view({T, 1, half});  // (T, 1, D/2)
  at::Tensor x1 = x.narrow(-1, 0, half);                      // (B, T, N, D/2)
  at::Tensor x2 = x.narrow(-1, half, half);                   // (B, T, N, D/2)
  return at::cat({x1 * c - x2 * s, x1 * s + x2 * c}, -1);     // (B, T, N, D)
}

at::Tensor RopeBTND(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  TORCH_CHECK(x.dim() == 4 && x.size(-1) % 2 == 0 && cos.size(0) == x.size(1) &&
                  cos.size(1) == x.size(3) / 2 && sin.sizes() == cos.sizes(),
              "RopeBTND: x ", x.sizes(), " and tables ", cos.sizes(), " do not fit");
  if (!TakesFused(x) || cos.scalar_type() != at::kFloat || !cos.device().is_cpu()) {
    return CompositeRopeBTND(x, cos, sin);
  }
  return RopeFunction::apply(x.contiguous(), cos.contiguous(), sin.contiguous());
}

at::Tensor CompositeShortConvSilu(const at::Tensor& x, const at::Tensor& weight) {
  const int64_t T = x.size(1), C = x.size(2), K = weight.size(1);
  at::Tensor w = weight.to(x.scalar_type()).unsqueeze(1);  // (C, 1, K)
  at::Tensor y = at::conv1d(x.transpose(1, 2), w, /*bias=*/{}, /*stride=*/1,
                            /*padding=*/K - 1, /*dilation=*/1, /*groups=*/C);  // (B, C, T + K - 1)
  return at::silu(y.narrow(2, 0, T).transpose(1, 2));                          // (B, T, C)
}

at::Tensor ShortConvSilu(const at::Tensor& x, const at::Tensor& weight) {
  TORCH_CHECK(x.dim() == 3 && weight.dim() == 2 && weight.size(0) == x.size(2), "ShortConvSilu: x ",
              x.sizes(), " and weight ", weight.sizes(), " do not fit");
  if (!TakesFused(x) || weight.scalar_type() != at::kFloat) {
    return CompositeShortConvSilu(x, weight);
  }
  return ShortConvSiluFunction::apply(x.contiguous(), weight.contiguous());
}

at::Tensor CompositeSwiGluActivation(const at::Tensor& gate_up) {
  auto parts = gate_up.chunk(2, -1);     // 2 x (..., F)
  return at::silu(parts[0]) * parts[1];  // (..., F)
}

at::Tensor SwiGluActivation(const at::Tensor& gate_up) {
  TORCH_CHECK(gate_up.size(-1) % 2 == 0, "SwiGluActivation: odd last dim ", gate_up.sizes());
  if (!TakesFused(gate_up)) return CompositeSwiGluActivation(gate_up);
  const int64_t F2 = gate_up.size(-1);
  std::vector<int64_t> shape(gate_up.sizes().begin(), gate_up.sizes().end());
  shape.back() = F2 / 2;
  at::Tensor flat = gate_up.contiguous().view({-1, F2});  // (rows, 2F)
  return SwiGluFunction::apply(flat).view(shape);         // (..., F)
}

}  // namespace onset::model
