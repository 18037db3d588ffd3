// Reading the coordinator's rows into domain types: the queries SqliteStore's readers and its
// writer share. Each takes the connection to use (a reader's or the writer's) and runs inside
// the caller's transaction.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store/store.h"
#include "db/sqlite.h"

namespace onset::coordinator::rows {

// The row id of the study named `name`; NotFound naming it.
absl::StatusOr<int64_t> StudyId(db::Connection& db, const std::string& name);
// The study with its counts per state (trunks left out), its repeated-failure alert and its
// device note; with its file's text unless `with_source` is false (listings).
absl::StatusOr<StudyInfo> LoadStudy(db::Connection& db, int64_t study_id, bool with_source = true);
// Its cells of `page`, in queue order; `next_after`, when given, receives the next page's
// `after` (0 when no cell follows the page). `without_trunks`: only grid points (results).
absl::StatusOr<std::vector<CellInfo>> LoadCells(db::Connection& db, int64_t study_id,
                                                const CellPage& page = {},
                                                int64_t* next_after = nullptr,
                                                bool without_trunks = false);
// The study's cells that `filter` selects, in queue order.
absl::StatusOr<std::vector<CellInfo>> FindCells(db::Connection& db, int64_t study_id,
                                                const CellFilter& filter);
// Its cells as stored: id, display axes, config, budget and role.
absl::StatusOr<std::vector<CellSpec>> LoadCellSpecs(db::Connection& db, int64_t study_id);
// Every cell of the study as trunk planning sees it (StudyStore::PlanCells), in queue order.
absl::StatusOr<std::vector<StoredPlanCell>> PlanCells(db::Connection& db, int64_t study_id);
// The row ids of the given cells of a study, ascending and each once (a cell named twice is
// one row); NotFound naming an unknown one.
absl::StatusOr<std::vector<int64_t>> CellRows(db::Connection& db, int64_t study_id,
                                              const std::vector<std::string>& cell_ids);
// The checkpoints the cell's lineage recorded (its checkpoint/bytes points: those of other
// lineages were discarded with them), the newest first, at most `limit`.
absl::StatusOr<std::vector<ResumePoint>> ResumePoints(db::Connection& db, int64_t cell_row,
                                                      int limit);
// "3 attempts in a row (3 cells) failed alike: <reason>" when the study's latest
// kRepeatedFailures failed attempts share their class and reason; empty otherwise.
std::string RepeatedFailureAlert(db::Connection& db, int64_t study_id);
// "2 queued cells need 4 devices; the largest registered worker has 2" when queued (or backoff)
// cells of the study need more devices than any registered worker has; empty otherwise, and
// while no worker is registered.
std::string WaitingForDevices(db::Connection& db, int64_t study_id);

// Device lists as stored (workers.devices, attempts.devices): comma-separated, "" for none.
std::string JoinDevices(const std::vector<std::string>& devices);

// The query that finds the cells whose id begins with a prefix (the id range ?1 <= hash < ?2,
// the prefix and the prefix followed by 'g', which sorts after every hex digit): in the study
// named ?3, or with `any_study` in every study. Columns: the cell's row, its study's name, its
// id; at most 20 rows. Each walks a range of an index (cells' (study_id, hash), or
// cells_by_hash), whatever the number of cells (`onset logs CELL`).
const char* CellsByPrefixSql(bool any_study);
// The query CellRows runs once per named cell: the row of the cell ?2 of the study ?1, by the
// index on cells' (study_id, hash), so a request's cost grows with its ids, not its study.
const char* CellByIdSql();
std::vector<std::string> SplitDevices(const std::string& stored);

// axes_json as written by AddStudy; anything but an object of strings reads as no axes (a
// damaged row shows without its axes rather than failing a whole listing).
std::map<std::string, std::string> ParseAxes(const std::string& axes_json);

// axes_json also holds the cell's axis aliases (CellSpec::axis_aliases), under this key: an
// object of arrays of strings, {"pos": ["nope-full"]}, absent when there are none. No axis has
// this name (axes are the named ones or dotted field paths), and ParseAxes, which keeps string
// values only, never sees it, so databases written before it read alike.
inline constexpr const char* kAxisAliasesKey = "aliases";
using AxisAliases = std::map<std::string, std::vector<std::string>>;
AxisAliases ParseAxisAliases(const std::string& axes_json);
// The axes_json of a cell with these axes and aliases (axes and aliases sorted by name).
std::string AxesJson(const std::map<std::string, std::string>& axes, const AxisAliases& aliases);
// `stored` with the values of `more` it lacks appended, leaving out any that is the axis' own
// value in `axes`.
AxisAliases MergeAxisAliases(AxisAliases stored, const AxisAliases& more,
                             const std::map<std::string, std::string>& axes);

}  // namespace onset::coordinator::rows
