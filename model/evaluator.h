// Evaluation of a model at one point of training (SCIENCE.md, "Measurements"):
//
//   eval/heldout_loss      mean next-token loss over eval.heldout_seqs held-out sequences
//   eval/short_loss        the same sequences cut into independent chunks of
//                          eval.short_context tokens, so no prediction sees more than that many tokens
//   niah/acc@<L>           exact-match accuracy of greedy decoding on NIAH prompts of length L
//   niah/acc               mean over every NIAH sample
//   niah/acc_in_window     samples whose record-to-query distance < model.window (S cells only)
//   niah/acc_beyond_window samples whose distance >= model.window (S cells only)
//   niah/<variant>/acc@<L>, niah/<variant>/acc  the mean task score (niah_tasks.h) of each
//                          non-single variant in eval.niah_variants, per length and overall;
//                          lengths too short for the variant's records are left out
//   rh/score/l<L>h<H>      retrieval-head score (retrieval_heads.h) of head H of F/S layer L,
//                          averaged over every single-NIAH sample (not only the mostly-right
//                          ones of the original protocol: this one is defined at every eval
//                          point, so its emergence can be timed)
//   rh/max_full            the largest score among F-layer heads (cells with F layers)
//   rh/max_full_mostly_right  the same over mostly-right samples only, when there are any
//   rh/count_full, rh/count_sliding  heads with score > 0.1 in F / S layers
//   ablation/top_k/niah_acc, ablation/random_k/niah_acc  with eval.ablation_heads = K > 0, at
//                          the final eval only: single-NIAH accuracy with the K best-scoring
//                          heads masked, and with K heads drawn with a fixed seed
//   eval/niah_seconds      wall time of the NIAH decoding (with the attention trace)
//   eval/probe_seconds     wall time of the retrieval scoring and the ablation reruns
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
#include "model/niah_tasks.h"
#include "model/retrieval_heads.h"
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
  // `autocast_bf16` mirrors the training precision on CUDA; `final_eval` adds the ablation.
  std::map<std::string, double> Run(Transformer& model, bool autocast_bf16 = false,
                                    bool final_eval = false);

  double HeldoutLoss(Transformer& model, int context) const;
  // Single-variant NIAH accuracies. When `scorer` is not null it receives every sample's
  // attention trace (heads numbered as in retrieval_heads.h).
  std::map<std::string, double> Niah(Transformer& model,
                                     RetrievalHeadScorer* scorer = nullptr) const;
  // niah/<variant>/... metrics of the non-single variants.
  std::map<std::string, double> NiahVariants(Transformer& model) const;
  // rh/... metrics from a scorer filled by Niah.
  std::map<std::string, double> RetrievalMetrics(const RetrievalHeadScorer& scorer) const;
  // ablation/... metrics: masks the top-K heads by `scores`, then K random heads.
  std::map<std::string, double> Ablation(Transformer& model, const std::vector<double>& scores,
                                         int k) const;

 private:
  struct NiahGroup {
    int length = 0;
    at::Tensor prompts;                // (B, L)
    std::vector<NiahSample> samples;   // B entries
    std::vector<double> depths;        // B entries: the depth each sample's needle was asked at
  };

  struct VariantGroup {
    std::string variant;
    int length = 0;
    std::vector<NiahTask> tasks;  // equal rounds and prompt lengths
  };

  ModelConfig model_config_;
  std::vector<int> attention_layers_;  // the F and S layers
  int ablation_heads_;
  uint64_t ablation_seed_;
  int short_context_;  // eval.resolved_short_context()
  at::Device device_;
  at::Tensor heldout_;  // (N, seq_len + 1) int64, empty when eval.heldout_seqs == 0
  std::vector<NiahGroup> niah_;
  std::vector<VariantGroup> variants_;
};

}  // namespace onset::model
