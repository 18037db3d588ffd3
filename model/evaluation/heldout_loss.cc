#include "model/evaluation/heldout_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onset::model {
namespace {

constexpr int64_t kMaxLogits = int64_t{1} << 27;  // floats of logits per forward

// How many sequences of `len` positions one forward may take.
int64_t PerForward(int64_t len, int64_t vocab) {
  return std::max<int64_t>(1, kMaxLogits / std::max<int64_t>(1, len * vocab));
}

}  // namespace

LossWindows MakeLossWindows(const at::Tensor& rows, const at::Tensor& mask, int64_t context) {
  TORCH_CHECK(rows.dim() == 2 && rows.size(1) >= 2, "held-out rows must be (N, T + 1)");
  TORCH_CHECK(context >= 1, "the context must be at least one position");
  const int64_t N = rows.size(0), T = rows.size(1) - 1, c = context;
  at::Tensor cpu = rows.to(at::kCPU).contiguous();
  at::Tensor keep = mask.defined() ? mask.to(at::kCPU, at::kBool).contiguous()
                                   : at::ones({N, T}, at::TensorOptions().dtype(at::kBool));
  TORCH_CHECK(keep.size(0) == N && keep.size(1) == T, "the target mask must be (N, T)");
  const int64_t* r = cpu.data_ptr<int64_t>();
  const bool* k = keep.data_ptr<bool>();
  std::vector<int64_t> inputs, targets;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t* row = r + n * (T + 1);
    for (int64_t i = c; i < T; ++i) {  // i + 1 > c positions in the row: a window
      if (!k[n * T + i]) continue;
      inputs.push_back(row[0]);  // BOS
      inputs.insert(inputs.end(), row + i - c + 2, row + i + 1);
      targets.push_back(row[i + 1]);
    }
  }
  const int64_t W = static_cast<int64_t>(targets.size());
  LossWindows w;
  w.inputs = at::tensor(inputs, at::kLong).view({W, c}).to(rows.device());  // (W, c)
  w.targets = at::tensor(targets, at::kLong).to(rows.device());             // (W)
  return w;
}

double WindowedLoss(Transformer& model, const at::Tensor& rows, const at::Tensor& mask,
                    int64_t context) {
  const int64_t N = rows.size(0), T = rows.size(1) - 1, V = model->config().vocab_size;
  const int64_t c = std::min(context, T);
  at::Tensor keep = mask.defined() ? mask.to(rows.device(), at::kBool)
                                   : at::ones({N, T}, rows.options().dtype(at::kBool));  // (N, T)
  double total = 0;
  int64_t counted = 0;
  // Targets i < c see i + 1 <= c positions in the row itself: its own forward.
  at::Tensor near = keep.clone();         // (N, T)
  near.narrow(1, c, T - c).fill_(false);  // targets i >= c go to windows
  const int64_t rows_per = PerForward(T, V);
  for (int64_t i = 0; i < N; i += rows_per) {
    const int64_t n = std::min(rows_per, N - i);
    at::Tensor part = rows.narrow(0, i, n);           // (n, T + 1)
    at::Tensor logits = model(part.narrow(1, 0, T));  // (n, T, V)
    at::Tensor loss =
        at::cross_entropy_loss(logits.reshape({-1, V}), part.narrow(1, 1, T).reshape({-1}),
                               /*weight=*/{}, at::Reduction::None)
            .view({n, T});                // (n, T)
    at::Tensor m = near.narrow(0, i, n);  // (n, T)
    total += loss.masked_select(m).sum().item<double>();
    counted += m.sum().item<int64_t>();
  }
  if (c < T) {
    const LossWindows w = MakeLossWindows(rows, keep, c);  // (W, c), (W)
    const int64_t W = w.targets.size(0), per = PerForward(c, V);
    for (int64_t i = 0; i < W; i += per) {
      const int64_t n = std::min(per, W - i);
      at::Tensor last = model(w.inputs.narrow(0, i, n)).select(1, c - 1);  // (n, V)
      total +=
          at::cross_entropy_loss(last, w.targets.narrow(0, i, n), /*weight=*/{}, at::Reduction::Sum)
              .item<double>();
    }
    counted += W;
  }
  if (counted == 0) return std::numeric_limits<double>::quiet_NaN();
  return total / static_cast<double>(counted);
}

}  // namespace onset::model
