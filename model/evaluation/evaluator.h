// Evaluation of a model at one point of training (docs/metrics.md defines every metric below;
// docs/schema.md lists them for users). Every NIAH prompt depends on data.seed and the data and
// eval configs only, so every cell of a study is measured on the same samples.
//
// Losses (heldout_loss.h), over eval.heldout_seqs held-out sequences:
//   eval/heldout_loss             every target, the whole row as context
//   eval/heldout_background_loss  the background targets only (record, question and answer
//                                 tokens left out), the whole row as context
//   eval/short_loss               the same background targets, each seeing at most
//                                 eval.short_context positions (a sliding window)
//
// The headline NIAH task is multi-key (niah_tasks.h): eval.niah_records records with distinct
// keys, one asked; exact match of every value token. Per prompt length L, depth and sample:
//   niah/acc@<L>                  accuracy at each length
//   niah/acc                      THE HEADLINE: the mean of niah/acc@<L> over L <= seq_len
//   niah/extrapolation/acc        the mean of niah/acc@<L> over L > seq_len (when listed)
//   niah/acc_depth@<D>            by the needle's depth D, lengths <= seq_len
//   niah/acc_in_window, niah/acc_beyond_window
//                                 by record-to-query distance below / at or above
//                                 eval.niah_window (the study's smallest window), for every
//                                 cell, lengths <= seq_len
//   niah/acc_in_own_window, niah/acc_beyond_own_window
//                                 the same split at this cell's own window (S cells only)
// Controls:
//   niah/control/key_swap_rate@<L>, niah/control/key_swap_rate
//                                 the headline prompts asking another of their records' keys:
//                                 how often the answer stays the same (copying: ~1; matching:
//                                 ~0); the summary over L <= seq_len
//   niah/control/distractor_copy_rate@<L>, niah/control/distractor_copy_rate
//                                 prompts whose asked key is in no record: how often the model
//                                 decodes some record's value exactly; the summary over
//                                 L <= seq_len
//   niah/<variant>/acc@<L>, niah/<variant>/acc
//                                 the mean task score of each eval.niah_variants entry (single,
//                                 multi-value, multi-query) at each length, and over
//                                 L <= seq_len; lengths too short are left out
// Retrieval heads (retrieval_heads.h), over every headline sample at lengths <= seq_len and its
// key swap, when there are at least eval.rh_min_samples of them:
//   rh/samples                    how many samples the scores average
//   rh/score/l<L>h<H>             head H of F/S layer L: top attention on the asked record's
//                                 value, minus on that value when another key is asked
//   rh/max_full                   the largest score among F-layer heads
//   rh/count_full, rh/count_sliding  heads with score > 0.1 in F / S layers
// Head-masking ablation (head_ablation.h), eval.ablation_heads = K > 0, final eval only, on the
// in-length headline prompts split into a selection half and a test half:
//   ablation/selection/drop/l<L>h<H>  selection-half accuracy lost when head H of layer L
//                                 (any mixer) is masked alone: the score heads are chosen by
//   ablation/selection/niah_acc, ablation/test/niah_acc   unmasked accuracy of each half
//   ablation/top_k/niah_acc       test half, the K best-scoring heads masked together;
//                                 ablation/top_k/heads (K), ablation/top_k/full_heads (of them F)
//   ablation/random_k/niah_acc_mean, _std, _min, _max, ablation/random_k/draws
//                                 test half, eval.ablation_draws sets of K heads from outside
//                                 the top K with its layer-type mix masked in turn; named
//                                 ablation/random_k_any_mix/... when no set keeps the mix
//   ablation/full/niah_acc, ablation/full/heads
//   ablation/efficient/niah_acc, ablation/efficient/heads
//                                 test half, the top min(K, available) heads of the F layers /
//                                 of the efficient (S, L, D) layers masked
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

  // What decoding the headline prompts (or their key swaps) gave: per headline group (prompt
  // length) and task, round 0's tokens; and, when traced, each in-length group's attention.
  struct Decoded {
    std::vector<std::vector<std::vector<Token>>> answers;  // [group][task][m]
    std::vector<AttentionTrace> traces;                    // [group]; empty when not traced
  };

  // eval/... losses.
  std::map<std::string, double> Losses(Transformer& model) const;
  // The headline multi-key metrics (niah/acc...). When `decoded` is not null it receives the
  // answers, and with `trace` the attention of the in-length groups.
  std::map<std::string, double> Niah(Transformer& model, Decoded* decoded = nullptr,
                                     bool trace = false) const;
  // niah/control/... metrics. `headline` is what Niah decoded for this model, or null (then
  // the headline is decoded again); `swaps` (may be null) receives the key swaps' decoding,
  // traced like the headline's with `trace`.
  std::map<std::string, double> Control(Transformer& model, const Decoded* headline = nullptr,
                                        Decoded* swaps = nullptr, bool trace = false) const;
  // niah/<variant>/... metrics of eval.niah_variants.
  std::map<std::string, double> NiahVariants(Transformer& model) const;
  // rh/... metrics from the traced decoding of the headline and of its key swaps.
  std::map<std::string, double> RetrievalMetrics(const Decoded& headline,
                                                 const Decoded& swaps) const;
  // ablation/... metrics with K = `k` heads.
  std::map<std::string, double> Ablation(Transformer& model, int k) const;

  // Prompts of one task variant at one length, asked in equal rounds.
  struct TaskGroup {
    std::string name;  // "niah", "niah/control", "niah/<variant>"
    int length = 0;
    bool in_length = false;  // length <= seq_len
    std::vector<NiahTask> tasks;
    std::vector<double> depths;  // per task: the depth its first record was asked at
    std::vector<int> sample;     // per task: its sample index within its depth
    at::Tensor prompts;          // (B, L) round-0 prompts on the device
  };
  // The headline prompts, one group per length in eval.niah_lengths order (lengths too short
  // for the task left out), the tasks of each by depth, then sample.
  const std::vector<TaskGroup>& headline() const { return headline_; }
  // Niah() as Run() measures it: in eval mode, without gradients, under bf16 autocast when
  // `autocast_bf16`; `decoded` (not null) receives every headline answer.
  std::map<std::string, double> DecodeHeadline(Transformer& model, bool autocast_bf16,
                                               Decoded* decoded) const;

  // Which in-length headline samples an accuracy covers: sample s of each (length, depth) is
  // in the selection half when s is even, in the test half when odd.
  enum class Half { kAll, kSelection, kTest };
  // Headline accuracy over lengths <= seq_len (the mean over lengths, as niah/acc), with the
  // flat heads `masked` (layer * H + head, any mixer) masked; NaN when the half is empty.
  double HeadlineAccuracy(Transformer& model, Half half, const std::vector<int>& masked) const;

 private:
  // Greedy decoding of every round of `group`: [task][round][m tokens]. With `trace` not null,
  // round 0's attention trace.
  std::vector<std::vector<std::vector<Token>>> Decode(Transformer& model, const TaskGroup& group,
                                                      AttentionTrace* trace) const;
  std::vector<TaskGroup> MakeGroups(const CellConfig& config, const SyntheticData& data,
                                    NiahVariant variant, const std::string& name) const;
  // The headline's key-swap prompts, one group per headline group: (B, L) on the device.
  void MakeKeySwaps(const CellConfig& config);
  // Cached decoding of `prompts` (B, L) for m = value_len tokens: [task][m]; with `trace` not
  // null, the attention too.
  std::vector<std::vector<Token>> DecodeOnce(Transformer& model, const at::Tensor& prompts,
                                             AttentionTrace* trace) const;

  ModelConfig model_config_;
  DataConfig data_config_;
  std::vector<int> attention_layers_;  // the F and S layers
  int value_len_;
  int niah_window_;    // eval.resolved_niah_window()
  int short_context_;  // eval.resolved_short_context()
  int rh_min_samples_;
  int ablation_heads_, ablation_draws_;
  uint64_t ablation_seed_;
  at::Device device_;
  at::Tensor heldout_;             // (N, seq_len + 1) int64, empty when eval.heldout_seqs == 0
  at::Tensor heldout_background_;  // (N, seq_len) bool: which targets are background
  std::vector<TaskGroup> headline_, control_, variants_;
  // Per headline group: the key-swap prompts (B, L), undefined for one-record tasks, and
  // which distractor each asks.
  std::vector<at::Tensor> key_swaps_;
  std::vector<std::vector<size_t>> key_swap_records_;
};

}  // namespace onset::model
