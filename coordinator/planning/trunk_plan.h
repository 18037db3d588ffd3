// Trunk planning (docs/wsd-trunks.md): which of a study's WSD cells run as branches of a shared
// trunk, and the trunks they need. Pure: it reads the submitted cells and what the store holds
// of the study, and writes nothing.
//
// Cells whose stable phases are equal (model/config/wsd_trunk.h, StablePhaseJson: the same
// point of every axis but the budget and the decay, the same warmup in tokens, data and seed)
// form a group. A group of two or more budgets that decay after their first step gets one
// trunk: it trains the stable phase once, up to the largest branch point, checkpoints at every
// branch point, and evaluates where its branches' independent runs would before their branch
// points. Each budget's cell becomes a branch that starts from its checkpoint.
//
// Studies are append-only: a stored cell keeps its role. A new cell joins a stored trunk of its
// group when the trunk can serve it as planned: its branch point is one of the trunk's or beyond
// the trunk's end (the trunk is extended from its last checkpoint), every eval point it needs
// up to the trunk's end is one the trunk evaluates at, and the trunk has not ended for good.
// Otherwise it runs on its own, and a note says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store/store.h"
#include "coordinator/study/grid.h"

namespace onset::coordinator {

struct TrunkPlanRequest {
  std::vector<CellSpec> cells;         // the file's cells, as expanded (role kCell)
  std::vector<StoredPlanCell> stored;  // the study's stored cells (StudyStore::PlanCells)
  // train.share_trunk: unset = share wherever possible; false = never; true = share, and refuse
  // a file whose budgets cannot (with the note that says why).
  std::optional<bool> share_trunk;
  std::string share_trunk_where;  // "studies/x.yaml:12", for the refusal
  // Whether the coordinator keeps checkpoints under a root every worker sees (onsetd
  // --checkpoint-root): without one a branch cannot find its trunk's checkpoint.
  bool shared_checkpoints = true;
};

struct TrunkPlan {
  // The file's cells with their roles (stored ones as stored), each new or extended trunk placed
  // before the first of its cells.
  std::vector<CellSpec> cells;
  // Why budgets that could have shared a trunk do not, one line per reason.
  std::vector<std::string> notes;
  // The tokens the file's cells take to train: each trunk once (to its end), each branch from
  // its branch point, each other cell its budget; and the sum of the budgets.
  int64_t tokens_to_train = 0;
  int64_t tokens_without_sharing = 0;
};

// InvalidArgument with the reason when share_trunk is true and some budgets cannot share, or a
// stored trunk's spec cannot be read.
absl::StatusOr<TrunkPlan> PlanTrunks(TrunkPlanRequest request);

// A digest of what PlanTrunks reads of the stored study: every cell's id, role, trunk and branch
// point, and each trunk's state, budget and spec (not cells' states or progress, which change
// all the time and do not change a plan). Two equal digests plan the same trunks; a submission
// stores its trunks only while the digest it was planned against still holds (NewStudy::
// planned_against), so concurrent submissions of one study cannot store a branch whose point is
// in no stored trunk spec.
std::string PlanInputDigest(const std::vector<StoredPlanCell>& stored);

}  // namespace onset::coordinator
