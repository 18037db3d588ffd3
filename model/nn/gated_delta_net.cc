#include "model/nn/gated_delta_net.h"

#include <algorithm>
#include <vector>

#include "model/nn/linear_attention.h"
#include "model/nn/unit_lower_solve.h"

namespace onset::model {

at::Tensor GatedDeltaNetChunked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& g, const at::Tensor& beta, int64_t chunk,
                                at::Tensor* final_state) {
  const ChunkLayout layout(q, chunk);
  const int64_t B = layout.B, H = layout.H, T = layout.T, C = layout.C, N = layout.N;
  const int64_t K = q.size(3), V = v.size(3);
  at::Tensor qc = layout.Split(q), kc = layout.Split(k), vc = layout.Split(v);  // (B, H, N, C, K|V)
  at::Tensor bc = layout.SplitScalars(beta).unsqueeze(-1);                      // (B, H, N, C, 1)
  at::Tensor b = layout.SplitScalars(g).cumsum(-1);         // (B, H, N, C) log-decay
  at::Tensor b_last = b.narrow(-1, C - 1, 1);               // (B, H, N, 1)
  at::Tensor decay = SegmentDecay(b, b, /*strict=*/false);  // (B, H, N, C, C)

  // UT transform: solve (I + A) [W_v | W_k] = [beta V | beta exp(b) K] for every chunk.
  at::Tensor kk = at::matmul(kc, kc.transpose(-2, -1));  // (B, H, N, C, C)
  // A's diagonal and upper part are never read (the solve takes I + its strictly lower part).
  at::Tensor A = kk * decay * bc;                                              // (B, H, N, C, C)
  at::Tensor rhs = at::cat({vc * bc, kc * (bc * b.exp().unsqueeze(-1))}, -1);  // (B, H, N, C, V+K)
  at::Tensor W = UnitLowerSolve(A, rhs);                                       // (B, H, N, C, V+K)
  at::Tensor w_v = W.narrow(-1, 0, V);                                         // (B, H, N, C, V)
  at::Tensor w_k = W.narrow(-1, V, K);                                         // (B, H, N, C, K)

  at::Tensor qk = at::matmul(qc, kc.transpose(-2, -1)) * decay;  // (B, H, N, C, C)
  at::Tensor q_decayed = qc * b.exp().unsqueeze(-1);             // (B, H, N, C, K)
  at::Tensor k_to_end = kc * (b_last - b).exp().unsqueeze(-1);   // (B, H, N, C, K)
  k_to_end = k_to_end.transpose(-2, -1);                         // (B, H, N, K, C)
  at::Tensor chunk_decay = b_last.exp().unsqueeze(-1);           // (B, H, N, 1, 1)

  at::Tensor S = at::zeros({B, H, K, V}, q.options());  // (B, H, K, V) state entering chunk n
  std::vector<at::Tensor> out;
  for (int64_t n = 0; n < N; ++n) {
    at::Tensor u = w_v.select(2, n) - at::matmul(w_k.select(2, n), S);  // (B, H, C, V)
    out.push_back(at::matmul(q_decayed.select(2, n), S) +
                  at::matmul(qk.select(2, n), u));  // (B, H, C, V)
    if (n + 1 < N || final_state) {
      S = S * chunk_decay.select(2, n) + at::matmul(k_to_end.select(2, n), u);  // (B, H, K, V)
    }
  }
  // Padded positions (k = beta = 0, g = 0) leave S as the last real position left it.
  if (final_state) *final_state = S;          // (B, H, K, V)
  at::Tensor y = at::cat(out, 2);             // (B, H, N*C, V)
  return layout.pad ? y.narrow(2, 0, T) : y;  // (B, H, T, V)
}

at::Tensor GatedDeltaNetStep(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& g, const at::Tensor& beta, at::Tensor* state) {
  at::Tensor decayed = *state * g.exp().unsqueeze(-1).unsqueeze(-1);                // (B, H, K, V)
  at::Tensor predicted = at::matmul(k.unsqueeze(-2), decayed);                      // (B, H, 1, V)
  at::Tensor u = beta.unsqueeze(-1).unsqueeze(-1) * (v.unsqueeze(-2) - predicted);  // (B, H, 1, V)
  *state = decayed + k.unsqueeze(-1) * u;                                           // (B, H, K, V)
  return at::matmul(q.unsqueeze(-2), *state).squeeze(-2);                           // (B, H, V)
}

at::Tensor GatedDeltaNetRecurrent(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& g, const at::Tensor& beta) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), K = q.size(3), V = v.size(3);
  at::Tensor state = at::zeros({B, H, K, V}, q.options());  // (B, H, K, V)
  std::vector<at::Tensor> out;
  for (int64_t t = 0; t < T; ++t) {
    out.push_back(GatedDeltaNetStep(q.select(2, t), k.select(2, t), v.select(2, t), g.select(2, t),
                                    beta.select(2, t), &state));  // (B, H, V)
  }
  return at::stack(out, 2);  // (B, H, T, V)
}

}  // namespace onset::model
