// What a WSD trunk's checkpoints (model/config/wsd_trunk.h) hold, as a trunk resuming itself and
// a branch starting from one read it.
//
// A branch: the trunk trained this cell's stable phase (the checkpoint's config has the same
// StablePhaseJson; the loader checks that) up to some step boundary. Up to its branch point (the
// last step boundary before its decay starts) the cell's own run would have trained the same
// steps; it would also have reported the same train events, since the trunk reports on the
// train.log_every_steps cadence alone, but only the eval events at its own eval step ends
// (EvalStepEnds), where the trunk evaluated for every budget it serves. The branch then
// continues as a resumed run does, replaying what it took as its own reports.
//
// A trunk: its spec may have grown since a checkpoint was written (a larger budget joined), with
// eval points the checkpoint's run passed without evaluating; it resumes an older checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/config/cell_config.h"
#include "model/training/checkpoint.h"

namespace onset::model {

// The tokens of the eval events in `reported` (TrainProgress::reported's JSON lines).
std::set<int64_t> ReportedEvals(const std::string& reported);

// Why `cell` cannot branch at all (it is not WSD), or nullopt. `path` is the trunk checkpoint,
// named in the message.
std::optional<std::string> BranchRefusal(const std::string& path, const CellConfig& cell);

// Checks that `cell` can continue from the trunk checkpoint at `path` whose progress is
// `*progress`: a step boundary no later than the cell's decay start, with an eval at each of the
// cell's eval step ends up to there. Then keeps in progress->reported the train events and the
// eval events at those step ends, in their order, and drops every other line. Errors name the
// file and leave `*progress` as it was.
std::optional<std::string> AdoptTrunkProgress(const std::string& path, const CellConfig& cell,
                                              TrainProgress* progress);

// Why a trunk that evaluates at `eval_at` cannot resume from its checkpoint at `path` with
// `progress`: it passed one of them without evaluating (an eval point of a budget that joined
// later). Nullopt when it can.
std::optional<std::string> TrunkResumeRefusal(const std::string& path,
                                              const std::vector<int64_t>& eval_at,
                                              const TrainProgress& progress);

}  // namespace onset::model
