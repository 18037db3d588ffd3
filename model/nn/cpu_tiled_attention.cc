#include "model/nn/cpu_tiled_attention.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>

#include "model/nn/cpu_vector.h"

// The Fortran BLAS sgemm of the BLAS LibTorch links (MKL in the x86 wheels, which export it).
// Weak: a LibTorch without it leaves this null and the products go through at::mm.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc)
    __attribute__((weak));

namespace onset::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::atomic<bool> g_sgemm{true};

// Row-major C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C, beta 0 or 1 (0: C is not
// read). op(X) = X^T when trans_x; X is then stored (k, m) (or (n, k)). ld*: row strides.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (sgemm_ != nullptr && g_sgemm.load(std::memory_order_relaxed)) {
    // Column-major BLAS sees each row-major matrix transposed: C^T = op(B)^T op(A)^T.
    const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
    const int ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb),
              ildc = static_cast<int>(ldc);
    sgemm_(trans_b ? "T" : "N", trans_a ? "T" : "N", &in, &im, &ik, &alpha, b, &ildb, a, &ilda,
           &beta, c, &ildc);
    return;
  }
  auto opts = at::TensorOptions().dtype(at::kFloat);
  auto view = [&](const float* p, int64_t rows, int64_t cols, int64_t ld, bool trans) {
    at::Tensor t = at::from_blob(const_cast<float*>(p), {trans ? cols : rows, trans ? rows : cols},
                                 {ld, 1}, opts);
    return trans ? t.t() : t;
  };
  at::Tensor product = at::mm(view(a, m, k, lda, trans_a), view(b, k, n, ldb, trans_b));
  at::Tensor out = at::from_blob(c, {m, n}, {ldc, 1}, opts);
  if (beta == 0) {
    out.copy_(product.mul_(alpha));
  } else {
    out.add_(product, alpha);
  }
}

// The rows' elementwise passes, each one vectorised loop built per CPU (cpu_vector.h).

// x[0, n) <- softmax(x); returns log(sum(exp(x))). n >= 1.
ONSET_SIMD_CLONES float SoftmaxRow(float* x, int64_t n) {
  float m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const float p = FastExp(x[j] - m);
    x[j] = p;
    sum += p;
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) x[j] *= inv;
  return m + std::log(sum);
}

// x[0, n) <- exp(x - shift).
ONSET_SIMD_CLONES void ExpRow(float* x, int64_t n, float shift) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) x[j] = FastExp(x[j] - shift);
}

// dp[0, n) <- p * (dp - delta).
ONSET_SIMD_CLONES void SoftmaxGradRow(const float* p, float* dp, int64_t n, float delta) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - delta);
}

ONSET_SIMD_CLONES float Dot(const float* a, const float* b, int64_t n) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < n; ++j) dot += a[j] * b[j];
  return dot;
}

// The keys query tile [s, e) sees: [first, e).
int64_t FirstKey(int64_t s, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, s - window + 1) : 0;
}

// Row i's visible keys within its tile's [ks, e): columns [lo, hi] of the tile.
struct RowSpan {
  int64_t lo, hi;
};
RowSpan Visible(int64_t i, int64_t ks, int64_t window) {
  const int64_t first = window > 0 ? std::max(ks, i - window + 1) : ks;
  return {first - ks, i - ks};
}

// A (B, N, T, D) tensor's strides as the kernels read it: rows of D contiguous floats.
struct Strided {
  const float* data;
  int64_t batch, head, row;
};
Strided Read(const at::Tensor& x) {
  return {x.const_data_ptr<float>(), x.stride(0), x.stride(1), x.stride(2)};
}

// Query rows per tile: kTiledQueryRows, fewer when T is shorter.
int64_t TileRows(int64_t T) { return std::max<int64_t>(1, std::min(kTiledQueryRows, T)); }

// The longest key range of a tile: its queries plus the window's reach to the left.
int64_t MaxTileKeys(int64_t T, int64_t window) {
  return window > 0 ? std::min(T, TileRows(T) + window - 1) : T;
}

std::unique_ptr<float[]> Scratch(int64_t n) { return std::unique_ptr<float[]>(new float[n]); }

// Forward of head (b, h): o rows (T, D) at stride o_row, lse (T).
void ForwardHead(const float* q, int64_t q_row, const float* k, int64_t k_row, const float* v,
                 int64_t v_row, float* o, int64_t o_row, float* lse, int64_t T, int64_t D,
                 int64_t window, float scale, float* s_tile) {
  const int64_t rows = TileRows(T);
  for (int64_t s = 0; s < T; s += rows) {
    const int64_t e = std::min(T, s + rows), R = e - s;
    const int64_t ks = FirstKey(s, window), K = e - ks;
    // s_tile (R, K) = scale * Q[s:e] K[ks:e]^T
    Gemm(false, true, R, K, D, scale, q + s * q_row, q_row, k + ks * k_row, k_row, 0.0f, s_tile, K);
    for (int64_t r = 0; r < R; ++r) {
      float* row = s_tile + r * K;
      const RowSpan span = Visible(s + r, ks, window);
      lse[s + r] = SoftmaxRow(row + span.lo, span.hi - span.lo + 1);
      std::fill(row, row + span.lo, 0.0f);
      std::fill(row + span.hi + 1, row + K, 0.0f);
    }
    // O[s:e] (R, D) = P V[ks:e]
    Gemm(false, false, R, D, K, 1.0f, s_tile, K, v + ks * v_row, v_row, 0.0f, o + s * o_row, o_row);
  }
}

// Backward of head h into its key/value head's dk, dv (accumulated) and its own dq.
void BackwardHead(const float* q, int64_t q_row, const float* k, int64_t k_row, const float* v,
                  int64_t v_row, const float* o, int64_t o_row, const float* d_o, int64_t do_row,
                  const float* lse, float* dq, int64_t dq_row, float* dk, float* dv,
                  int64_t dkv_row, int64_t T, int64_t D, int64_t window, float scale, float* p_tile,
                  float* dp_tile, float* delta) {
  const int64_t rows = TileRows(T);
  for (int64_t s = 0; s < T; s += rows) {
    const int64_t e = std::min(T, s + rows), R = e - s;
    const int64_t ks = FirstKey(s, window), K = e - ks;
    for (int64_t r = 0; r < R; ++r) {  // delta_i = rowsum(dO * O)
      delta[r] = Dot(d_o + (s + r) * do_row, o + (s + r) * o_row, D);
    }
    // P (R, K) = exp(scale * Q K^T - lse), recomputed
    Gemm(false, true, R, K, D, scale, q + s * q_row, q_row, k + ks * k_row, k_row, 0.0f, p_tile, K);
    for (int64_t r = 0; r < R; ++r) {
      float* row = p_tile + r * K;
      const RowSpan span = Visible(s + r, ks, window);
      ExpRow(row + span.lo, span.hi - span.lo + 1, lse[s + r]);
      std::fill(row, row + span.lo, 0.0f);
      std::fill(row + span.hi + 1, row + K, 0.0f);
    }
    // dV[ks:e] (K, D) += P^T dO[s:e]
    Gemm(true, false, K, D, R, 1.0f, p_tile, K, d_o + s * do_row, do_row, 1.0f, dv + ks * dkv_row,
         dkv_row);
    // dP (R, K) = dO[s:e] V[ks:e]^T
    Gemm(false, true, R, K, D, 1.0f, d_o + s * do_row, do_row, v + ks * v_row, v_row, 0.0f, dp_tile,
         K);
    for (int64_t r = 0; r < R; ++r) {  // dS = P * (dP - delta), zero where P is
      SoftmaxGradRow(p_tile + r * K, dp_tile + r * K, K, delta[r]);
    }
    // dQ[s:e] (R, D) = scale * dS K[ks:e]
    Gemm(false, false, R, D, K, scale, dp_tile, K, k + ks * k_row, k_row, 0.0f, dq + s * dq_row,
         dq_row);
    // dK[ks:e] (K, D) += scale * dS^T Q[s:e]
    Gemm(true, false, K, D, R, scale, dp_tile, K, q + s * q_row, q_row, 1.0f, dk + ks * dkv_row,
         dkv_row);
  }
}

struct TiledAttentionFunction : public torch::autograd::Function<TiledAttentionFunction> {
  // q (B, H, T, D), k, v (B, G, T, D), last dims contiguous -> (B, H, T, D) viewing (B, T, H, D).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, int64_t window) {
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), G = k.size(1);
    const int64_t groups = H / G;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    at::Tensor out = at::empty({B, T, H, D}, q.options());  // (B, T, H, D)
    at::Tensor lse = at::empty({B, H, T}, q.options());     // (B, H, T)
    const Strided qs = Read(q), ks = Read(k), vs = Read(v);
    float* op = out.mutable_data_ptr<float>();
    float* lp = lse.mutable_data_ptr<float>();
    const int64_t tile = TileRows(T) * MaxTileKeys(T, window);
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
      auto s_tile = Scratch(tile);
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / H, h = bh % H, g = h / groups;
        ForwardHead(qs.data + b * qs.batch + h * qs.head, qs.row,
                    ks.data + b * ks.batch + g * ks.head, ks.row,
                    vs.data + b * vs.batch + g * vs.head, vs.row, op + (b * T * H + h) * D, H * D,
                    lp + bh * T, T, D, window, scale, s_tile.get());
      }
    });
    at::Tensor o = out.transpose(1, 2);  // (B, H, T, D)
    ctx->save_for_backward({q, k, v, o, lse});
    ctx->saved_data["window"] = window;
    return o;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &o = saved[3], &lse = saved[4];
    const int64_t window = ctx->saved_data["window"].toInt();
    at::Tensor d_o = grads[0];
    if (d_o.stride(3) != 1) d_o = d_o.contiguous();
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), G = k.size(1);
    const int64_t groups = H / G;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    at::Tensor dq = at::empty({B, T, H, D}, q.options());  // (B, T, H, D)
    at::Tensor dk = at::zeros({B, T, G, D}, q.options());  // (B, T, G, D)
    at::Tensor dv = at::zeros({B, T, G, D}, q.options());  // (B, T, G, D)
    const Strided qs = Read(q), ks = Read(k), vs = Read(v), os = Read(o), ds = Read(d_o);
    const float* lp = lse.const_data_ptr<float>();
    float* dqp = dq.mutable_data_ptr<float>();
    float* dkp = dk.mutable_data_ptr<float>();
    float* dvp = dv.mutable_data_ptr<float>();
    const int64_t tile = TileRows(T) * MaxTileKeys(T, window);
    // One task per key/value head: its query heads' dK and dV sums stay in one thread.
    at::parallel_for(0, B * G, 1, [&](int64_t begin, int64_t end) {
      auto p_tile = Scratch(tile), dp_tile = Scratch(tile), delta = Scratch(TileRows(T));
      for (int64_t bg = begin; bg < end; ++bg) {
        const int64_t b = bg / G, g = bg % G;
        for (int64_t h = g * groups; h < (g + 1) * groups; ++h) {
          BackwardHead(
              qs.data + b * qs.batch + h * qs.head, qs.row, ks.data + b * ks.batch + g * ks.head,
              ks.row, vs.data + b * vs.batch + g * vs.head, vs.row,
              os.data + b * os.batch + h * os.head, os.row, ds.data + b * ds.batch + h * ds.head,
              ds.row, lp + (b * H + h) * T, dqp + (b * T * H + h) * D, H * D,
              dkp + (b * T * G + g) * D, dvp + (b * T * G + g) * D, G * D, T, D, window, scale,
              p_tile.get(), dp_tile.get(), delta.get());
        }
      }
    });
    return {dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2), at::Tensor()};
  }
};

// The kernels read rows of D contiguous floats at any other strides, with int BLAS strides.
at::Tensor RowsContiguous(const at::Tensor& x) {
  const bool fits = x.stride(3) == 1 && x.stride(2) <= std::numeric_limits<int>::max();
  return fits ? x : x.contiguous();
}

}  // namespace

void SetTiledAttentionUsesSgemm(bool on) { g_sgemm.store(on, std::memory_order_relaxed); }
bool TiledAttentionUsesSgemm() {
  return sgemm_ != nullptr && g_sgemm.load(std::memory_order_relaxed);
}

bool TiledAttentionTakes(const at::Tensor& q) {
  return q.device().is_cpu() && q.scalar_type() == at::kFloat && q.dim() == 4 && q.size(3) > 0;
}

int64_t TiledKeysPerTile(int64_t T, int64_t window) {
  return MaxTileKeys(T, window >= T ? 0 : window);
}

at::Tensor TiledCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t window) {
  TORCH_CHECK(TiledAttentionTakes(q) && k.scalar_type() == at::kFloat &&
                  v.scalar_type() == at::kFloat && k.device().is_cpu() && v.device().is_cpu(),
              "tiled attention takes float32 CPU tensors, got ", q.scalar_type(), " on ",
              q.device());
  TORCH_CHECK(k.dim() == 4 && v.sizes() == k.sizes() && k.size(0) == q.size(0) &&
                  k.size(2) == q.size(2) && k.size(3) == q.size(3) && k.size(1) > 0 &&
                  q.size(1) % k.size(1) == 0,
              "tiled attention: q ", q.sizes(), " and k, v ", k.sizes(),
              " are not (B, H, T, D) and (B, G, T, D) with G dividing H");
  const int64_t T = q.size(2);
  const int64_t w = window >= T ? 0 : window;
  return TiledAttentionFunction::apply(RowsContiguous(q), RowsContiguous(k), RowsContiguous(v), w);
}

}  // namespace onset::model
