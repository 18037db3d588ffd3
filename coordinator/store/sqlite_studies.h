// A submission in the studies and cells rows (SqliteStore::AddStudy and PreviewStudy): the checks
// against what is stored, the study's row, its new and relabelled cells, trunks given a larger
// budget, and the links of new branches to their trunks. Each function runs inside the caller's
// write transaction, which a preview rolls back.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
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

// A submission planned outside this write (NewStudy::planned_against) holds only if the study is
// still as it was then; Aborted "plan it again" otherwise.
absl::Status CheckPlanHolds(db::Connection& db, const NewStudy& study);

// What is stored of the study's cells, by cell id.
struct StoredCells {
  std::unordered_map<std::string, std::string> axes_json;
  std::unordered_map<std::string, rows::AxisAliases> aliases;
  std::unordered_map<std::string, int64_t> trunk_budgets;  // trunks only: their tokens_budget
};

// The study's row: created, or updated with the submission's description and source once the
// submission passed the append-only check (study/append_only.h) against the stored grid points,
// whose rows fill `stored`. Returns the study's row id.
absl::StatusOr<int64_t> UpsertStudy(db::Connection& db, const NewStudy& study, int64_t now,
                                    StoredCells* stored);

// Inserts the submission's new cells (counted and listed in `result`), shows stored ones with the
// latest submission's display axes (keeping every submission's aliases), and extends a stored
// trunk given a larger budget: it trains on from its last checkpoint, so a succeeded one is
// queued again. Returns the new branches, which LinkBranches links.
absl::StatusOr<std::vector<const CellSpec*>> WriteCells(db::Connection& db, int64_t study_id,
                                                        const NewStudy& study, int64_t now,
                                                        StoredCells* stored,
                                                        AddStudyResult* result);

// Links each new branch to its trunk, a trunk of the study stored before or in this submission
// (InvalidArgument naming both when there is none), and marks it ready when the checkpoint it
// starts from is there already (a budget joining a point the trunk has passed).
absl::Status LinkBranches(db::Connection& db, int64_t study_id, const std::string& study,
                          const std::vector<const CellSpec*>& branches);

// result->study, and result->cells: the submission's cells as stored, in its order.
absl::Status LoadSubmitted(db::Connection& db, int64_t study_id, const NewStudy& study,
                           AddStudyResult* result);

}  // namespace onset::coordinator::studies
