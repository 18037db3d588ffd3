// Warmup-stable-decay runs that share a trunk (docs/science.md, "Token budgets and learning-rate
// schedules"). Under WSD, the runs of several budgets of one cell are the same run until their
// decay starts: one trunk trains the stable phase once, checkpoints at each budget's branch
// point, and each budget's cell (a branch) resumes from its checkpoint to run its decay. Torch-
// free: the coordinator plans trunks with it, the trainer runs them and checks what it resumes.
//
// Which cells can share a trunk: WSD cells whose canonical configs agree on everything that
// decides training before the decay (StablePhaseJson). The budget, the decay's length, shape and
// floor, the checkpoint cadence and the eval points do not; the warmup, data, seed, model and
// every other training setting do (so a warmup left at its default, 5% of the budget, keeps
// budgets apart). The trainer never lets evaluation change training (it draws no random numbers
// a training step uses), so when evaluations happen does not matter.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config/cell_config.h"
#include "model/config/json_fields.h"

namespace onset::model {

// Tokens one optimizer step trains on: max(1, batch_tokens / seq_len) sequences of seq_len.
int64_t TokensPerStep(const CellConfig& config);

// A WSD cell's branch point: the last step boundary at or before its decay starts
// (TrainConfig::wsd_decay_start). Every step up to it trains at the rate any budget's run of the
// same stable phase would; the first step after it is the first of the decay. 0 when the decay
// starts within the first step (nothing to share).
int64_t BranchPoint(const CellConfig& config);

// The token counts, all step boundaries, after whose step the trainer evaluates `config`
// (the first step end at or beyond each eval point, as Trainer::Run decides), those <= up_to, in
// order. At most `limit` of them: more returns nullopt.
std::optional<std::vector<int64_t>> EvalStepEnds(const CellConfig& config, int64_t up_to,
                                                 size_t limit = 100'000);

// The fields (dotted paths of the canonical JSON) that do not decide training up to the branch
// point, so that budgets differing only in them share a trunk: train.tokens, decay_fraction,
// decay_shape, min_lr_ratio, the checkpoint fields, and eval.every_tokens, log_points and
// log_start. The one list the trunk's id and the coordinator's grouping of grid points both use.
const std::array<std::string_view, 10>& BudgetFields();

// `canonical` (a cell's canonical JSON, CellConfig::ToJson) without the BudgetFields. Cells with
// equal stable-phase JSON can share a trunk.
nlohmann::json StablePhaseJson(nlohmann::json canonical);

// The id of the trunk a WSD cell's stable phase belongs to: 16 hex digits, never equal to a
// cell's id (it hashes "trunk:" + the stable-phase JSON).
std::string TrunkIdOf(const CellConfig& config);

// The first field (dotted path) where two cells' stable phases differ, with both values:
// "train.warmup_tokens: 50000 vs 100000". Empty when they are equal.
std::string StablePhaseDifference(const CellConfig& a, const CellConfig& b);

// What onset-train needs to run a trunk: the config of one of its branches (its largest; the
// budget-dependent fields mean nothing here), where the trunk stops, the step ends after which
// it evaluates (the union of what its branches need before their branch points) and its branch
// points, at each of which it writes a checkpoint that is never pruned. The trunk trains at the
// WSD rate without its decay: warmup, then the peak rate until `until`.
struct TrunkSpec {
  CellConfig cell;
  int64_t until = 0;                   // the largest branch point
  std::vector<int64_t> eval_at;        // increasing step ends <= until
  std::vector<int64_t> branch_points;  // increasing step ends <= until, the last == until

  // {"trunk": {"until": N, "eval_at": [...], "branch_points": [...]}, "cell": {canonical}}.
  nlohmann::json ToJson() const;
};

inline constexpr size_t kMaxTrunkPoints = 100'000;  // eval_at and branch_points, each

// Whether `j` is a trunk spec's JSON (an object with a "trunk" key) rather than a cell config.
bool IsTrunkSpecJson(const nlohmann::json& j);

// Reads a trunk spec: the cell through ParseCellConfig (errors under "cell."), which must be
// WSD; until > 0 a step boundary; eval_at and branch_points increasing step boundaries in
// (0, until], at most kMaxTrunkPoints each, branch_points ending at until.
std::optional<FieldError> ParseTrunkSpec(const nlohmann::json& j, TrunkSpec* out);

}  // namespace onset::model
