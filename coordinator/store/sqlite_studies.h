// A submission in the studies and cells rows (SqliteStore::AddStudy and PreviewStudy), in two
// steps so that no write waits behind a large one: what it would change is worked out from the
// stored rows on a reader (PlanWrites: the append-only check, which cells are new, relabelled or
// extended trunks), which is all a preview needs; a submission then writes that in bounded
// transactions (ApplyStudy, then ApplyCells a chunk at a time), each of which the lease traffic
// can pass between.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/store.h"
#include "db/sqlite.h"

namespace onset::coordinator::studies {

// A branch names its trunk and branches at tokens >= 0; InvalidArgument naming the cell
// otherwise.
absl::Status CheckRoles(const std::vector<CellSpec>& cells);

// What a submission writes. The pointers are into the NewStudy it was planned from, which must
// outlive it.
struct SubmissionWrites {
  std::optional<int64_t> study_id;  // the stored study's row; none: a new study
  // The study's newest cell row when planned: cells are never deleted, so the study is as it was
  // planned while this is still its newest (0: it had none).
  int64_t newest_cell_row = 0;
  std::vector<const CellSpec*> new_cells;  // each once, in the file's order (the queue's)
  std::vector<std::pair<const CellSpec*, std::string>> relabels;  // stored cell, new axes_json
  std::vector<const CellSpec*> extended_trunks;  // stored trunks given a larger budget
};

// Works out `study`'s writes from the stored rows; reads only. Aborted "plan it again" when
// NewStudy::planned_against no longer holds; FailedPrecondition when a new cell would redefine a
// stored grid point (study/append_only.h), or when the tags the study lacks would take it past
// kMaxTags (study_file.h); InvalidArgument when a new branch's trunk is neither stored nor
// submitted.
absl::StatusOr<SubmissionWrites> PlanWrites(db::Connection& db, const NewStudy& study);

// What AddStudy will return for `writes`, without writing: the study as it will be counted and
// the submission's cells (stored ones as they are, new ones queued), in its order. Reads only.
absl::StatusOr<AddStudyResult> PreviewResult(db::Connection& db, const NewStudy& study,
                                             const SubmissionWrites& writes, int64_t now);

// The first transaction of a submission: Aborted (plan it again) unless the study is as
// `writes` was planned against, FailedPrecondition when its tags would take the study past
// kMaxTags (checked here again, inside the write); then the study's row (created, or given the
// submission's description and source) and its tags, the extended trunks (the lifecycle's
// Extend: a succeeded one runs again) and the relabels. Returns the study's row.
absl::StatusOr<int64_t> ApplyStudy(db::Connection& db, const NewStudy& study,
                                   const SubmissionWrites& writes, int64_t now);

// Shows stored cells with their new display axes (SubmissionWrites::relabels).
absl::Status ApplyRelabels(db::Connection& db, int64_t study_id,
                           const std::vector<std::pair<const CellSpec*, std::string>>& relabels);

// Inserts `cells` (new cells of the study) and links each branch among them to its trunk,
// marking it ready when its checkpoint is there; a branch stays not ready, so never claimed,
// until it is linked. Returns the branches whose trunk is not stored yet (it comes in a later
// chunk): LinkBranches links them.
absl::StatusOr<std::vector<const CellSpec*>> ApplyCells(db::Connection& db, int64_t study_id,
                                                        const NewStudy& study,
                                                        const std::vector<const CellSpec*>& cells,
                                                        int64_t now);

// Links `branches` to their trunks, now stored. InvalidArgument naming both when a trunk is not.
absl::Status LinkBranches(db::Connection& db, int64_t study_id, const std::string& study,
                          const std::vector<const CellSpec*>& branches);

// The ids of the submission's new cells, in the file's order.
std::vector<std::string> NewCellIds(const NewStudy& study, const SubmissionWrites& writes);

// result->study, and result->cells: the submission's cells as stored, in its order.
absl::Status LoadSubmitted(db::Connection& db, int64_t study_id, const NewStudy& study,
                           AddStudyResult* result);

}  // namespace onset::coordinator::studies
