#include "model/nn/linear_attention.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace onset::model {

at::Tensor SegmentDecay(const at::Tensor& row, const at::Tensor& col, bool strict) {
  const int64_t M = row.size(-1);
  at::Tensor exponent = row.unsqueeze(-1) - col.unsqueeze(-2);  // (..., M, M)
  auto opts = at::TensorOptions().dtype(at::kLong).device(row.device());
  at::Tensor i = at::arange(M, opts).unsqueeze(1);  // (M, 1)
  at::Tensor j = at::arange(M, opts).unsqueeze(0);  // (1, M)
  at::Tensor hidden = strict ? j >= i : j > i;      // (M, M)
  const double minus_inf = -std::numeric_limits<double>::infinity();
  return exponent.masked_fill(hidden, minus_inf).exp();  // (..., M, M)
}

ChunkLayout::ChunkLayout(const at::Tensor& q, int64_t chunk)
    : B(q.size(0)), H(q.size(1)), T(q.size(2)) {
  TORCH_CHECK(chunk >= 1, "chunk length must be >= 1, got ", chunk);
  C = std::min(chunk, T);
  N = (T + C - 1) / C;
  pad = N * C - T;
}

at::Tensor ChunkLayout::Split(const at::Tensor& x) const {
  at::Tensor p = pad ? at::constant_pad_nd(x, {0, 0, 0, pad}) : x;  // (B, H, N*C, X)
  return p.reshape({B, H, N, C, x.size(3)});                        // (B, H, N, C, X)
}

at::Tensor ChunkLayout::SplitScalars(const at::Tensor& x) const {
  return (pad ? at::constant_pad_nd(x, {0, pad}) : x).reshape({B, H, N, C});  // (B, H, N, C)
}

at::Tensor DecayedLinearAttentionChunked(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, const at::Tensor& g, int64_t chunk,
                                         at::Tensor* final_state) {
  const ChunkLayout layout(q, chunk);
  const int64_t B = layout.B, H = layout.H, T = layout.T, C = layout.C, N = layout.N;
  const int64_t K = q.size(3), V = v.size(3);
  at::Tensor qc = layout.Split(q), kc = layout.Split(k), vc = layout.Split(v);  // (B, H, N, C, K|V)
  at::Tensor gc = layout.SplitScalars(g);                                       // (B, H, N, C)
  at::Tensor b = gc.cumsum(-1);                // (B, H, N, C) log-decay since chunk start
  at::Tensor b_last = b.narrow(-1, C - 1, 1);  // (B, H, N, 1) whole-chunk log-decay

  // Inside each chunk: masked, decayed attention.
  at::Tensor scores = at::matmul(qc, kc.transpose(-2, -1));  // (B, H, N, C, C)
  scores = scores * SegmentDecay(b, b, /*strict=*/false);    // (B, H, N, C, C)
  at::Tensor intra = at::matmul(scores, vc);                 // (B, H, N, C, V)

  // What each chunk adds to the state, decayed to the chunk's end.
  at::Tensor k_to_end = kc * (b_last - b).exp().unsqueeze(-1);    // (B, H, N, C, K)
  at::Tensor added = at::matmul(k_to_end.transpose(-2, -1), vc);  // (B, H, N, K, V)
  // State entering chunk n: sum over m < n of exp(L_{n-1} - L_m) added_m, L the cumulative
  // chunk log-decay (inclusive); L_{n-1} = L_n - l_n.
  at::Tensor l = b_last.squeeze(-1);                           // (B, H, N)
  at::Tensor L = l.cumsum(-1);                                 // (B, H, N)
  at::Tensor carry = SegmentDecay(L - l, L, /*strict=*/true);  // (B, H, N, N)
  at::Tensor entering = at::matmul(carry, added.reshape({B, H, N, K * V}))
                            .reshape({B, H, N, K, V});                  // (B, H, N, K, V)
  at::Tensor inter = at::matmul(qc * b.exp().unsqueeze(-1), entering);  // (B, H, N, C, V)

  if (final_state) {
    // Padded positions (k = 0, g = 0) leave the state as the last real position left it.
    *final_state = entering.select(2, N - 1) * l.select(2, N - 1).exp().view({B, H, 1, 1}) +
                   added.select(2, N - 1);  // (B, H, K, V)
  }
  at::Tensor y = (intra + inter).reshape({B, H, N * C, V});  // (B, H, N*C, V)
  return layout.pad ? y.narrow(2, 0, T) : y;                 // (B, H, T, V)
}

at::Tensor DecayedLinearAttentionStep(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& g, at::Tensor* state) {
  at::Tensor kv = k.unsqueeze(-1) * v.unsqueeze(-2);           // (B, H, K, V)
  *state = *state * g.exp().unsqueeze(-1).unsqueeze(-1) + kv;  // (B, H, K, V)
  return at::matmul(q.unsqueeze(-2), *state).squeeze(-2);      // (B, H, V)
}

at::Tensor DecayedLinearAttentionRecurrent(const at::Tensor& q, const at::Tensor& k,
                                           const at::Tensor& v, const at::Tensor& g) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), K = q.size(3), V = v.size(3);
  at::Tensor state = at::zeros({B, H, K, V}, q.options());  // (B, H, K, V)
  std::vector<at::Tensor> out;
  for (int64_t t = 0; t < T; ++t) {
    out.push_back(DecayedLinearAttentionStep(q.select(2, t), k.select(2, t), v.select(2, t),
                                             g.select(2, t), &state));  // (B, H, V)
  }
  return at::stack(out, 2);  // (B, H, T, V)
}

}  // namespace onset::model
