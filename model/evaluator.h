// Evaluation of a model at one point of training (SCIENCE.md, "Measurements"):
//
//   eval/heldout_loss      mean next-token loss over eval.heldout_seqs held-out sequences
//   eval/short_loss        the same sequences cut into independent chunks of
//                          eval.short_context tokens, so no prediction sees more than that many tokens
//   niah/acc@<L>           exact-match accuracy of greedy decoding on NIAH prompts of length L
//   niah/acc               mean over every NIAH sample
//   niah/acc_in_window     samples whose record-to-query distance < model.window (S cells only)
//   niah/acc_beyond_window samples whose distance >= model.window (S cells only)
//
// A bucket with no samples is left out rather than reported as a number. The held-out and NIAH
// data depend on data.seed only, so every cell of a study is measured on the same tokens.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "model/cell_config.h"
#include "model/decoding.h"
#include "model/synthetic_data.h"
#include "model/transformer.h"

namespace onset::model {

// Stacks equal-length token vectors into a (B, L) int64 tensor on `device`.
at::Tensor ToTensor(const std::vector<std::vector<Token>>& rows, const at::Device& device);

class Evaluator {
 public:
  // Builds the held-out sequences and NIAH prompts once; `data` must outlive the evaluator.
  Evaluator(const CellConfig& config, const SyntheticData& data, const at::Device& device);

  // Runs every measurement in eval mode without gradients; restores train mode after.
  // `autocast_bf16` mirrors the training precision on CUDA.
  std::map<std::string, double> Run(Transformer& model, bool autocast_bf16 = false);

  double HeldoutLoss(Transformer& model, int context) const;
  std::map<std::string, double> Niah(Transformer& model) const;

 private:
  struct NiahGroup {
    int length = 0;
    at::Tensor prompts;                // (B, L)
    std::vector<NiahSample> samples;   // B entries
  };

  ModelConfig model_config_;
  int short_context_;  // eval.resolved_short_context()
  at::Device device_;
  at::Tensor heldout_;  // (N, seq_len + 1) int64, empty when eval.heldout_seqs == 0
  std::vector<NiahGroup> niah_;
};

}  // namespace onset::model
