// A submitted study file, planned: its cells as the study file expands them, with the trunks
// that WSD budgets share (trunk_plan.h) given what the store already holds of the study.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store/study_store.h"
#include "coordinator/study/study_file.h"

namespace onset::coordinator {

struct PlannedSubmission {
  NewStudy study;  // what to store (or preview): the file's cells and their trunks
  std::vector<std::string> sharing_notes;
  int64_t tokens_to_train = 0;
  int64_t tokens_without_sharing = 0;
};

// `shared_checkpoints`: whether the coordinator has a checkpoint root every worker sees. The
// study it returns stores only while the stored study is still the one it was planned against
// (NewStudy::planned_against); SubmitPlanned plans again when it is not.
// Errors: the store's, and PlanTrunks' refusal of a file that asks for sharing it cannot have.
absl::StatusOr<PlannedSubmission> PlanSubmission(StudyStore& store, StudySpec spec,
                                                 bool shared_checkpoints);

// Plans the study `parse` reads and stores it (or, with `dry_run`, previews it), planning
// again when another submission of the study was stored between the plan and the write (at
// most kPlanAttempts times, then Aborted). A study holds up to 100,000 cells, so they are never
// copied: each plan consumes one reading of the file (`parse` is called once per plan; its
// errors are returned as they are). `*planned` receives the plan that was stored, without its
// cells (the answer holds them).
inline constexpr int kPlanAttempts = 8;
absl::StatusOr<AddStudyResult> SubmitPlanned(
    StudyStore& store, const std::function<absl::StatusOr<StudySpec>()>& parse,
    bool shared_checkpoints, bool dry_run, PlannedSubmission* planned);

}  // namespace onset::coordinator
