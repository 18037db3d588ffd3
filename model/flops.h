// Model FLOPs of training, for the MFU (model FLOPs utilisation) estimate on GPUs. Torch-free.
//
// Counted per trained token, forward + backward (= 3x forward), multiply-add = 2 FLOPs, and only
// the work the model needs (no padding, no masked-out attention):
//
//   dense     6 * (N + d_model * V)       N = non-embedding parameters; the output projection's
//                                         d_model * V multiply-adds count whether tied or not
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

#include "model/cell_config.h"

namespace onset::model {

double TrainFlopsPerToken(const ModelConfig& model, int64_t non_embedding_params);

// The dense bf16 tensor-core peak (FLOP/s) of a GPU by its CUDA device name, for the GPUs whose
// figure is published (H100/H200 SXM 989.4e12, H100 PCIe 756e12, A100 312e12, L40S 362e12,
// B200 2.25e15); nullopt for others (then no MFU is reported unless --peak-tflops gives it).
std::optional<double> PeakBf16Flops(const std::string& device_name);

}  // namespace onset::model
