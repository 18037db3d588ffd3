#include "model/evaluation/heldout_loss.h"

#include <algorithm>

namespace onset::model {
namespace {

// BOS, then targets[:, :-1]: the chunk fed as a training sequence.
at::Tensor ChunkInputs(const at::Tensor& bos, const at::Tensor& targets) {
  const int64_t n = targets.size(0), len = targets.size(1);
  return at::cat({bos.expand({n, 1}), targets.narrow(1, 0, len - 1)}, 1);  // (n, len)
}

}  // namespace

std::vector<LossChunks> MakeLossChunks(const at::Tensor& rows, int64_t context) {
  TORCH_CHECK(rows.dim() == 2 && rows.size(1) >= 2, "held-out rows must be (N, T + 1)");
  TORCH_CHECK(context >= 1, "the context must be at least one position");
  const int64_t N = rows.size(0), T = rows.size(1) - 1;
  const int64_t c = std::min(context, T);
  const int64_t full = T / c, rest = T - full * c;
  const at::Tensor bos = rows.narrow(1, 0, 1);  // (N, 1): every row starts with BOS
  std::vector<LossChunks> chunks;
  if (full > 0) {
    at::Tensor targets = rows.narrow(1, 1, full * c).reshape({N * full, c});  // (N * full, c)
    at::Tensor row_bos = bos.repeat_interleave(full, 0);                      // (N * full, 1)
    chunks.push_back({ChunkInputs(row_bos, targets), targets});
  }
  if (rest > 0) {
    at::Tensor targets = rows.narrow(1, 1 + full * c, rest);  // (N, rest)
    chunks.push_back({ChunkInputs(bos, targets), targets});
  }
  return chunks;
}

double ChunkedLoss(Transformer& model, const at::Tensor& rows, int64_t context,
                   int64_t rows_per_forward) {
  const int64_t N = rows.size(0), T = rows.size(1) - 1;
  double total = 0;
  for (int64_t i = 0; i < N; i += rows_per_forward) {
    const int64_t n = std::min(rows_per_forward, N - i);
    for (const LossChunks& chunk : MakeLossChunks(rows.narrow(0, i, n), context)) {
      at::Tensor logits = model(chunk.inputs);  // (chunks, len, V)
      total +=
          at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), chunk.targets.reshape({-1}),
                                 /*weight=*/{}, at::Reduction::Sum)
              .item<double>();
    }
  }
  return total / static_cast<double>(N * T);
}

}  // namespace onset::model
