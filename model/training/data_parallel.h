// The data-parallel protocol of a training run (docs/data-parallel.md), over the Collective
// seam: which rank this is, which sequences of a step it trains on, and the few collective
// steps the trainer takes (rank 0's model to every rank, the gradients' sum, agreeing on a flag,
// rank 0's numbers to every rank). A world of one (no collective given) skips every collective
// call, so a single process pays nothing for it.
//
// A step's S sequences are split into N contiguous shares: rank r takes sequences
// [S*r/N, S*(r+1)/N), so shares differ by at most one and may be empty when S < N.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "model/distributed/collective.h"

namespace onset::model {

class DataParallel {
 public:
  // `collective` (not owned, outlives this) connects the ranks; null = a single process.
  // Flags and numbers travel as small tensors on `device`, which the collective must accept.
  DataParallel(Collective* collective, const at::Device& device);
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const { return collective_->rank(); }
  int world_size() const { return collective_->world_size(); }
  bool lead() const { return rank() == 0; }  // reports, evaluates and writes checkpoints
  bool distributed() const { return world_size() > 1; }

  // Sequences [first, end) of a step.
  struct Share {
    int64_t first = 0;
    int64_t end = 0;
  };
  // Rank `rank`'s share of a step of `seqs` sequences over `world` ranks.
  static Share ShareOf(int64_t seqs, int rank, int world);
  Share ShareOf(int64_t seqs) const { return ShareOf(seqs, rank(), world_size()); }

  // Rank 0's parameters and buffers to every rank. Ranks build the same model from the same
  // seed, or load the same checkpoint; this makes sure of it, as DDP does, before the first step.
  void BroadcastModel(const torch::nn::Module& model);

  // Sums `params`' gradients and `loss_sum` over the ranks, in place, before clipping. A
  // parameter has a gradient on a rank once that rank back-propagated through it, and a rank
  // with no sequences this step has none: a parameter no rank reached keeps no gradient (the
  // optimizer skips it, as in one process), one any rank reached gets the sum, counting zeros
  // for the ranks that did not.
  void SumGradients(const std::vector<at::Tensor>& params, const at::Tensor& loss_sum);

  // Whether `flag` holds on any rank (one small all-reduce when distributed). Ranks receive a
  // stop signal at different moments, say; with this they all stop after the same step.
  bool AnyRank(bool flag);

  // Rank 0's `values` on every rank (the other ranks pass as many of their own, ignored).
  std::vector<int64_t> FromLead(const std::vector<int64_t>& values);

  // Returns once every rank has called it.
  void Barrier();

 private:
  SingleProcess single_process_;
  Collective* collective_;  // &single_process_ unless given
  at::Device device_;
};

}  // namespace onset::model
