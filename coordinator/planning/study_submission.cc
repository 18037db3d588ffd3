#include "coordinator/planning/study_submission.h"

#include <utility>

#include "coordinator/planning/trunk_plan.h"

namespace onset::coordinator {

absl::StatusOr<PlannedSubmission> PlanSubmission(StudyStore& store, StudySpec spec,
                                                 bool shared_checkpoints) {
  absl::StatusOr<std::vector<StoredPlanCell>> stored = store.PlanCells(spec.name);
  if (!stored.ok()) return stored.status();
  const std::string digest = PlanInputDigest(*stored);
  TrunkPlanRequest request;
  request.cells = std::move(spec.cells);
  request.stored = std::move(*stored);
  request.share_trunk = spec.share_trunk;
  request.share_trunk_where = spec.source_name + ":" + std::to_string(spec.share_trunk_line);
  request.shared_checkpoints = shared_checkpoints;
  absl::StatusOr<TrunkPlan> plan = PlanTrunks(std::move(request));
  if (!plan.ok()) return plan.status();
  PlannedSubmission out;
  out.study = NewStudy{spec.name,
                       spec.description,
                       spec.source_name,
                       spec.source_yaml,
                       std::move(plan->cells),
                       spec.devices,
                       digest};
  out.study.tags = spec.tags;
  out.sharing_notes = std::move(plan->notes);
  out.tokens_to_train = plan->tokens_to_train;
  out.tokens_without_sharing = plan->tokens_without_sharing;
  return out;
}

absl::StatusOr<AddStudyResult> SubmitPlanned(
    StudyStore& store, const std::function<absl::StatusOr<StudySpec>()>& parse,
    bool shared_checkpoints, bool dry_run, PlannedSubmission* planned) {
  absl::Status last;
  std::string name;
  for (int attempt = 0; attempt < kPlanAttempts; ++attempt) {
    absl::StatusOr<StudySpec> spec = parse();
    if (!spec.ok()) return spec.status();
    name = spec->name;
    absl::StatusOr<PlannedSubmission> plan =
        PlanSubmission(store, *std::move(spec), shared_checkpoints);
    if (!plan.ok()) return plan.status();
    absl::StatusOr<AddStudyResult> added =
        dry_run ? store.PreviewStudy(plan->study) : store.AddStudy(plan->study);
    if (added.ok()) {
      std::vector<CellSpec>().swap(plan->study.cells);
      *planned = *std::move(plan);
      return added;
    }
    if (!absl::IsAborted(added.status())) return added.status();
    last = added.status();
  }
  return absl::AbortedError("study " + name + " changed under " + std::to_string(kPlanAttempts) +
                            " plans of this submission in a row (other submissions of it are "
                            "being stored): submit it again; last: " +
                            std::string(last.message()));
}

}  // namespace onset::coordinator
