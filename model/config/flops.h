// A model's size and the FLOPs of training it: the MFU (model FLOPs utilisation) estimate on
// GPUs, and the parameter and FLOPs columns of `onset results` and `onset compare` (the
// coordinator computes them from each cell's config). Torch-free.
//
// Counted per trained token, forward + backward (= 3x forward), multiply-add = 2 FLOPs, and only
// the work the model needs (no padding, no masked-out attention):
//
//   dense     6 * (N + d_model * V)       N = non-embedding parameters; the output projection's
//                                         d_model * V multiply-adds count whether tied or not;
//                                         the short convolutions' taps are in N (each is one
//                                         multiply-add per token, as a weight of a matrix is)
//   F layer   12 * d_model * (T + 1) / 2  scores and weighted sum over the causal past,
//                                         on average (T + 1) / 2 keys per query
//   S layer   12 * d_model * mean_i min(i + 1, w)   the same over the window
//   L, D      12 * d_model * ((C + 1) / 2 + 2 * head_dim)   the chunkwise form: causal
//                                         attention inside a chunk of C, plus reading and
//                                         updating a head_dim x head_dim state per head
//
// The recurrent layers' decay and gate elementwise work is left out (small next to the
// matrix products). MFU = tokens/s * TrainFlopsPerToken / peak FLOP/s of the devices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/config/cell_config.h"

namespace onset::model {

// The parameters of the LibTorch model (transformer.h) but the token embedding and, when the
// output projection is untied, the output matrix: exactly TransformerImpl::CountParams()
// .non_embedding, counted from the config. Per layer (C d_model, H heads, G key/value heads,
// D = C / H, F the SwiGLU hidden size):
//   two RMSNorm gains                   2 C
//   SwiGLU MLP (gate+up, down)          3 C F
//   F, S attention: qkv, output         C (H + 2 G) D + C^2, plus 2 D QK-norm gains
//   L: in_proj (q, k, v, gate, H gate logits), output, head-norm gain
//                                       C (4 C + H) + C^2 + D
//   D: in_proj (q, k, v, gate, H beta and H decay inputs), output, A_log and dt_bias per head,
//      head-norm gain                   C (4 C + 2 H) + C^2 + 2 H + D
//   the short convolution, where model.short_conv names the layer's letter: K taps per
//   convolved channel, 3 C K for L and D, (H + 2 G) D K for F and S
// and the final RMSNorm gain, C.
int64_t NonEmbeddingParams(const ModelConfig& model);

double TrainFlopsPerToken(const ModelConfig& model, int64_t non_embedding_params);

// The dense bf16 tensor-core peak (FLOP/s) of a GPU by its CUDA device name, for the GPUs whose
// figure is published (H100/H200 SXM 989.4e12, H100 PCIe 756e12, A100 312e12, L40S 362e12,
// B200 2.25e15); nullopt for others (then no MFU is reported: onset-train has no flag for it).
std::optional<double> PeakBf16Flops(const std::string& device_name);

}  // namespace onset::model
