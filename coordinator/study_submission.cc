#include "coordinator/study_submission.h"

#include <utility>

#include "coordinator/trunk_plan.h"

namespace onset::coordinator {

absl::StatusOr<PlannedSubmission> PlanSubmission(Store& store, StudySpec spec,
                                                 bool shared_checkpoints) {
  absl::StatusOr<std::vector<StoredPlanCell>> stored = store.PlanCells(spec.name);
  if (!stored.ok()) return stored.status();
  TrunkPlanRequest request;
  request.cells = std::move(spec.cells);
  request.stored = std::move(*stored);
  request.share_trunk = spec.share_trunk;
  request.share_trunk_where = spec.source_name + ":" + std::to_string(spec.share_trunk_line);
  request.shared_checkpoints = shared_checkpoints;
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(request);
  if (!plan.ok()) return plan.status();
  PlannedSubmission out;
  out.study = NewStudy{spec.name,        spec.description,       spec.source_name,
                       spec.source_yaml, std::move(plan->cells), spec.devices};
  out.sharing_notes = std::move(plan->notes);
  out.tokens_to_train = plan->tokens_to_train;
  out.tokens_without_sharing = plan->tokens_without_sharing;
  return out;
}

}  // namespace onset::coordinator
