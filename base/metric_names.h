// The names of the metrics onset-train reports that other programs act on, defined once for the
// trainer that writes them and the worker, coordinator and CLI that read them. What each one
// means is in docs/metrics.md; the evaluation's names are the evaluator's own
// (model/evaluation/evaluator.h).
#pragma once

namespace onset::metric {

// Training, every log_every_steps: the mean loss of the steps since the last report, the
// learning rate, the throughput and (on a GPU with a known peak) the model FLOPs utilisation.
inline constexpr char kTrainLoss[] = "train/loss";
inline constexpr char kTrainLr[] = "train/lr";
inline constexpr char kTrainTokensPerSecond[] = "train/tokens_per_second";
inline constexpr char kTrainMfu[] = "train/mfu";
// Time spent training, at the end of a run.
inline constexpr char kTrainSeconds[] = "train/seconds";
// Where a resumed run started.
inline constexpr char kTrainResumedAtTokens[] = "train/resumed_at_tokens";
// Parameter counts, at tokens 0.
inline constexpr char kModelParams[] = "model/params";
inline constexpr char kModelNonEmbeddingParams[] = "model/non_embedding_params";
// What writing a checkpoint cost. A WSD trunk's checkpoint/bytes point at a branch point is
// what makes that branch claimable (docs/wsd-trunks.md).
inline constexpr char kCheckpointSeconds[] = "checkpoint/seconds";
inline constexpr char kCheckpointBytes[] = "checkpoint/bytes";

}  // namespace onset::metric
