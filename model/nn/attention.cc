#include "model/nn/attention.h"

#include <cmath>
#include <limits>

namespace onset::model {

at::Tensor CausalBandMask(int64_t T, int64_t window, const at::Device& device) {
  auto opts = at::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor i = at::arange(T, opts).unsqueeze(1);  // (T, 1) query positions
  at::Tensor j = at::arange(T, opts).unsqueeze(0);  // (1, T) key positions
  at::Tensor mask = j <= i;                         // (T, T)
  if (window > 0) mask = mask & (i - j < window);   // (T, T)
  return mask;
}

at::Tensor ReferenceAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              int64_t window) {
  const int64_t T = q.size(2), D = q.size(3);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(D));
  // scores: (B, H, T, T)
  at::Tensor mask = CausalBandMask(T, window, q.device());  // (T, T)
  scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  at::Tensor probs = at::softmax(scores, -1);  // (B, H, T, T)
  return at::matmul(probs, v);                 // (B, H, T, D)
}

at::Tensor FullCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true);  // (B, H, T, D)
}

at::Tensor BandMaskAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             int64_t window) {
  at::Tensor mask = CausalBandMask(q.size(2), window, q.device());  // (T, T)
  return at::scaled_dot_product_attention(q, k, v, mask);           // (B, H, T, D)
}

at::Tensor BlockedSlidingWindowAttention(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, int64_t window) {
  TORCH_CHECK(window >= 1, "sliding window must be >= 1, got ", window);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), W = window;
  const int64_t N = (T + W - 1) / W;
  const int64_t pad = N * W - T;
  // Padded keys sit after every real query, so causality already hides them; padded queries
  // are sliced off at the end.
  auto padded = [&](const at::Tensor& x) {
    return pad ? at::constant_pad_nd(x, {0, 0, 0, pad}) : x;  // (B, H, N*W, D)
  };
  at::Tensor qc = padded(q).reshape({B, H * N, W, D});  // (B, H*N, W, D)
  at::Tensor kc = padded(k).reshape({B, H, N, W, D});   // (B, H, N, W, D)
  at::Tensor vc = padded(v).reshape({B, H, N, W, D});   // (B, H, N, W, D)
  // Each chunk's keys: the previous chunk (zeros before the first) then its own.
  auto with_previous = [&](const at::Tensor& x) {
    at::Tensor prev =
        at::constant_pad_nd(x, {0, 0, 0, 0, 1, 0}).narrow(2, 0, N);  // (B, H, N, W, D)
    return at::cat({prev, x}, 3).reshape({B, H * N, 2 * W, D});      // (B, H*N, 2W, D)
  };
  at::Tensor k2 = with_previous(kc);  // (B, H*N, 2W, D)
  at::Tensor v2 = with_previous(vc);  // (B, H*N, 2W, D)

  // Query a of chunk n is position n*W + a; key b is position (n-1)*W + b. Attend iff
  // 0 <= (W + a - b) < W, i.e. a < b <= a + W. In chunk 0 the keys b < W do not exist.
  auto opts = at::TensorOptions().dtype(at::kLong).device(q.device());
  at::Tensor a = at::arange(W, opts).view({1, W, 1});               // (1, W, 1)
  at::Tensor b = at::arange(2 * W, opts).view({1, 1, 2 * W});       // (1, 1, 2W)
  at::Tensor n = at::arange(N, opts).view({N, 1, 1});               // (N, 1, 1)
  at::Tensor mask = (b > a) & (b <= a + W) & ((n > 0) | (b >= W));  // (N, W, 2W)
  mask =
      mask.unsqueeze(0).expand({H, N, W, 2 * W}).reshape({1, H * N, W, 2 * W});  // (1, H*N, W, 2W)

  at::Tensor y = at::scaled_dot_product_attention(qc, k2, v2, mask);  // (B, H*N, W, D)
  y = y.reshape({B, H, N * W, D});                                    // (B, H, N*W, D)
  return pad ? y.narrow(2, 0, T) : y;                                 // (B, H, T, D)
}

at::Tensor RepeatKv(const at::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t B = x.size(0), G = x.size(1), T = x.size(2), D = x.size(3);
  at::Tensor repeated = x.unsqueeze(2).expand({B, G, groups, T, D});  // (B, G, groups, T, D)
  return repeated.reshape({B, G * groups, T, D});                     // (B, H, T, D)
}

at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t window) {
  const int64_t T = q.size(2);
  if (window <= 0 || window >= T) return FullCausalAttention(q, k, v);
  if (2 * window < T) return BlockedSlidingWindowAttention(q, k, v, window);
  return BandMaskAttention(q, k, v, window);
}

}  // namespace onset::model
