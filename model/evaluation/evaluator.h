// Evaluation of a model at one point of training (docs/metrics.md defines every metric below;
// docs/schema.md lists them for users). Every NIAH prompt depends on data.seed and the data and
// eval configs only, so every cell of a study is measured on the same samples.
//
// Losses (heldout_loss.h):
//   eval/heldout_loss      mean next-token loss over eval.heldout_seqs held-out sequences
//   eval/short_loss        the same targets with at most eval.short_context positions of
//                          context, every chunk starting with BOS as a training sequence does
//
// The headline NIAH task is multi-key (niah_tasks.h): eval.niah_records records with distinct
// keys, one asked; exact match of every value token. Per length L, depth and sample:
//   niah/acc@<L>, niah/acc      accuracy per length, and over every sample
//   niah/acc_depth@<D>          by the needle's depth D, over every length
//   niah/acc_in_window, niah/acc_beyond_window
//                               by record-to-query distance below / at or above
//                               eval.niah_window (the study's smallest window), for every cell
//   niah/acc_in_own_window, niah/acc_beyond_own_window
//                               the same split at this cell's own window (S cells only)
//   niah/control/distractor_copy_rate@<L>, niah/control/distractor_copy_rate
//                               prompts whose asked key is in no record: how often the model
//                               decodes some record's value exactly (copying without matching)
//   niah/<variant>/acc@<L>, niah/<variant>/acc
//                               the mean task score of each eval.niah_variants entry (single,
//                               multi-value, multi-query); lengths too short are left out
// Retrieval heads (retrieval_heads.h), from the headline samples answered right at lengths
// <= seq_len:
//   rh/samples                  how many samples the scores average (0: no score below)
//   rh/score/l<L>h<H>           head H of F/S layer L
//   rh/max_full                 the largest score among F-layer heads
//   rh/count_full, rh/count_sliding  heads with score > 0.1 in F / S layers
// Head-masking ablation (head_ablation.h), eval.ablation_heads = K > 0, final eval only, when
// rh/samples > 0: the headline accuracy (niah/acc) with
//   ablation/top_k/niah_acc     the K best-scoring heads masked
//   ablation/random_k/niah_acc_mean, _std, _min, _max, ablation/random_k/draws
//                               eval.ablation_draws sets of K heads from outside the top K,
//                               with its layer-type mix, masked in turn
// Cost: eval/niah_seconds (all NIAH decoding), eval/probe_seconds (scoring and ablation); the
// trainer adds eval/seconds, the whole evaluation.
//
// A bucket with no samples is left out rather than reported as a number.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "model/config/cell_config.h"
#include "model/data/synthetic_data.h"
#include "model/evaluation/decoding.h"
#include "model/evaluation/niah_tasks.h"
#include "model/evaluation/retrieval_heads.h"
#include "model/nn/transformer.h"

namespace onset::model {

// Stacks equal-length token vectors into a (B, L) int64 tensor on `device`.
at::Tensor ToTensor(const std::vector<std::vector<Token>>& rows, const at::Device& device);

class Evaluator {
 public:
  // Builds the held-out sequences and NIAH prompts once; `data` must outlive the evaluator.
  Evaluator(const CellConfig& config, const SyntheticData& data, const at::Device& device);

  // Runs every measurement in eval mode without gradients; restores train mode after.
  // `autocast_bf16` mirrors a bf16 cell's training numerics on the model's device;
  // `final_eval` adds the ablation.
  std::map<std::string, double> Run(Transformer& model, bool autocast_bf16 = false,
                                    bool final_eval = false);

  // The headline multi-key metrics (niah/acc...). When `scorer` is not null it is offered every
  // sample with its attention trace (heads numbered as in retrieval_heads.h).
  std::map<std::string, double> Niah(Transformer& model,
                                     RetrievalHeadScorer* scorer = nullptr) const;
  // niah/control/... metrics.
  std::map<std::string, double> Control(Transformer& model) const;
  // niah/<variant>/... metrics of eval.niah_variants.
  std::map<std::string, double> NiahVariants(Transformer& model) const;
  // rh/... metrics from a scorer filled by Niah.
  std::map<std::string, double> RetrievalMetrics(const RetrievalHeadScorer& scorer) const;
  // ablation/... metrics: masks the top-K heads by `scores`, then the baseline draws.
  std::map<std::string, double> Ablation(Transformer& model, const std::vector<double>& scores,
                                         int k) const;

 private:
  // Prompts of one task variant at one length, asked in equal rounds.
  struct TaskGroup {
    std::string name;  // "niah", "niah/control", "niah/<variant>"
    int length = 0;
    std::vector<NiahTask> tasks;
    std::vector<double> depths;  // per task: the depth its first record was asked at
    at::Tensor prompts;          // (B, L) round-0 prompts on the device
  };
  // Greedy decoding of every round of `group`: [task][round][m tokens]. With `trace` not null,
  // round 0's attention trace.
  std::vector<std::vector<std::vector<Token>>> Decode(Transformer& model, const TaskGroup& group,
                                                      AttentionTrace* trace) const;
  std::vector<TaskGroup> MakeGroups(const CellConfig& config, const SyntheticData& data,
                                    NiahVariant variant, const std::string& name) const;

  ModelConfig model_config_;
  std::vector<int> attention_layers_;  // the F and S layers
  int value_len_;
  int niah_window_;    // eval.resolved_niah_window()
  int short_context_;  // eval.resolved_short_context()
  int ablation_heads_, ablation_draws_;
  uint64_t ablation_seed_;
  at::Device device_;
  at::Tensor heldout_;  // (N, seq_len + 1) int64, empty when eval.heldout_seqs == 0
  std::vector<TaskGroup> headline_, control_, variants_;
};

}  // namespace onset::model
