// The names of the metrics onset-train reports, defined once for the trainer that writes them and
// the worker, coordinator, analysis, CLI and dashboard that read them: every fixed name, every
// family prefix, and for each name pattern its formatter and its parser. No other file spells a
// metric name (tests/base/metric_names_test.cc fails when one does). What each metric means is
// in docs/metrics.md; model/evaluation/evaluator.h says which step of the evaluation writes it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onset::metric {

// ---- Families: every name starts with one of these.
inline constexpr char kTrainFamily[] = "train/";
inline constexpr char kEvalFamily[] = "eval/";
inline constexpr char kNiahFamily[] = "niah/";
inline constexpr char kRetrievalHeadFamily[] = "rh/";
inline constexpr char kAblationFamily[] = "ablation/";
// The families an evaluation writes: what a cell's results show beside train/loss.
inline constexpr const char* kEvaluationFamilies[] = {kEvalFamily, kNiahFamily,
                                                      kRetrievalHeadFamily, kAblationFamily};

// ---- Training, every log_every_steps: the mean loss of the steps since the last report, the
// learning rate, the throughput and (on a GPU with a known peak) the model FLOPs utilisation.
inline constexpr char kTrainLoss[] = "train/loss";
inline constexpr char kTrainLr[] = "train/lr";
inline constexpr char kTrainTokensPerSecond[] = "train/tokens_per_second";
inline constexpr char kTrainMfu[] = "train/mfu";
// At the log steps too: the global L2 norm of the reporting step's gradient before clipping
// (summed over the ranks), the process's peak resident memory, and on a GPU the peak of bytes
// LibTorch's CUDA allocator has held (model/training/memory_peak.h).
inline constexpr char kTrainGradNorm[] = "train/grad_norm";
inline constexpr char kTrainPeakRssBytes[] = "train/peak_rss_bytes";
inline constexpr char kTrainPeakCudaBytes[] = "train/peak_cuda_allocated_bytes";
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

// ---- Losses on held-out sequences, and what an evaluation cost.
inline constexpr char kHeldoutLoss[] = "eval/heldout_loss";
inline constexpr char kHeldoutBackgroundLoss[] = "eval/heldout_background_loss";
inline constexpr char kShortLoss[] = "eval/short_loss";
inline constexpr char kEvalSeconds[] = "eval/seconds";
inline constexpr char kNiahSeconds[] = "eval/niah_seconds";
inline constexpr char kProbeSeconds[] = "eval/probe_seconds";

// ---- NIAH retrieval. The headline, and its per-length form AtLength(kNiahAcc, L).
inline constexpr char kNiahAcc[] = "niah/acc";
inline constexpr char kNiahExtrapolationAcc[] = "niah/extrapolation/acc";
// AtDepth(kNiahAccDepth, D): by the needle's depth D.
inline constexpr char kNiahAccDepth[] = "niah/acc_depth";
inline constexpr char kNiahAccInWindow[] = "niah/acc_in_window";
inline constexpr char kNiahAccBeyondWindow[] = "niah/acc_beyond_window";
inline constexpr char kNiahAccInOwnWindow[] = "niah/acc_in_own_window";
inline constexpr char kNiahAccBeyondOwnWindow[] = "niah/acc_beyond_own_window";
// The controls, each also AtLength(name, L).
inline constexpr char kKeySwapRate[] = "niah/control/key_swap_rate";
inline constexpr char kDistractorCopyRate[] = "niah/control/distractor_copy_rate";
// Task groups: the headline, the controls, and "niah/<variant>" per eval.niah_variants entry;
// a variant group reports GroupAcc(group) and AtLength(GroupAcc(group), L).
inline constexpr char kHeadlineGroup[] = "niah";
inline constexpr char kControlGroup[] = "niah/control";
std::string VariantGroup(std::string_view variant);  // "niah/<variant>"
std::string GroupAcc(std::string_view group);        // "<group>/acc"

// ---- Retrieval heads.
inline constexpr char kRhSamples[] = "rh/samples";
inline constexpr char kRhMaxFull[] = "rh/max_full";
inline constexpr char kRhCountFull[] = "rh/count_full";
inline constexpr char kRhCountSliding[] = "rh/count_sliding";
inline constexpr char kRhScore[] = "rh/score/";  // HeadName(kRhScore, L, H)

// ---- Head-masking ablation.
inline constexpr char kAblationSelectionAcc[] = "ablation/selection/niah_acc";
inline constexpr char kAblationTestAcc[] = "ablation/test/niah_acc";
inline constexpr char kAblationDrop[] = "ablation/selection/drop/";  // HeadName(kAblationDrop,..)
inline constexpr char kAblationTopKAcc[] = "ablation/top_k/niah_acc";
inline constexpr char kAblationTopKHeads[] = "ablation/top_k/heads";
inline constexpr char kAblationTopKFullHeads[] = "ablation/top_k/full_heads";
// Spread(prefix, ...) of random sets of K heads, with and without the top K's layer-type mix.
inline constexpr char kAblationRandomK[] = "ablation/random_k/";
inline constexpr char kAblationRandomKAnyMix[] = "ablation/random_k_any_mix/";
// The top heads of one kind of layer masked ("full", "efficient"): AblationKindAcc,
// AblationKindHeads.
std::string AblationKindAcc(std::string_view kind);    // "ablation/<kind>/niah_acc"
std::string AblationKindHeads(std::string_view kind);  // "ablation/<kind>/heads"
// A spread's names under `prefix`: niah_acc_mean, _std, _min, _max and draws.
std::string SpreadMean(std::string_view prefix);  // "<prefix>niah_acc_mean"
std::string SpreadStd(std::string_view prefix);
std::string SpreadMin(std::string_view prefix);
std::string SpreadMax(std::string_view prefix);
std::string SpreadDraws(std::string_view prefix);  // "<prefix>draws"

// ---- Patterns, each with its parser.
// "<base>@<length>", e.g. "niah/acc@512".
std::string AtLength(std::string_view base, int length);
// The length of `name` when it is AtLength(base, L) for some L >= 0; nullopt otherwise.
std::optional<int> LengthOf(std::string_view name, std::string_view base);
// "<base>@<depth>" with the depth as %g prints it, e.g. "niah/acc_depth@0.5".
std::string AtDepth(std::string_view base, double depth);
// Whether `name` is AtDepth(base, D) for some D.
bool IsAtDepth(std::string_view name, std::string_view base);
// "<prefix>l<layer>h<head>", e.g. "rh/score/l3h7".
std::string HeadName(std::string_view prefix, int layer, int head);
struct Head {
  int layer = 0;
  int head = 0;
};
// The layer and head of `name` when it is exactly HeadName(prefix, L, H) with L, H >= 0.
std::optional<Head> ParseHeadName(std::string_view name, std::string_view prefix);

// The metric a study is shown by first (the dashboard's curves, `onset compare` without
// --metric): the first NIAH accuracy of `names` in name order, else the training loss, else the
// first name; "" when there is none.
std::string HeadlineMetric(const std::vector<std::string>& names);

// Whether `name` starts with `prefix` (a family, or a name whose patterns follow it).
bool StartsWith(std::string_view name, std::string_view prefix);
// Whether an evaluation writes `name` (one of kEvaluationFamilies); the others come from
// training steps.
bool IsEvaluationMetric(std::string_view name);
// Whether `name` measures the machine a run ran on rather than the run: timings (names ending
// in "seconds"), throughput, MFU, peak memory. Two runs of one cell on one machine agree on every
// other metric, bit for bit.
bool DescribesTheMachine(std::string_view name);
// Whether `name` is a line of the random-K spread (kAblationRandomK) other than its mean (the
// CLI's results leave those out).
bool IsSpreadDetail(std::string_view name);

// The control metrics that go with a NIAH accuracy metric: for AtLength(kNiahAcc, L) the
// controls at that length, for any other "niah/acc..." their summaries; none otherwise. The key
// swap first.
std::vector<std::string> ControlsOf(std::string_view metric);
// Whether `metric` is a key-swap control (its summary or at a length).
bool IsKeySwap(std::string_view metric);

}  // namespace onset::metric
