// SqliteStore: what people ask of cells, cancel and rerun, carried out by the lifecycle
// (sqlite_lifecycle.h) cell by cell. Named cells cost a lookup each; a filter, a pass over the
// study's cells in the states it names. Which cells is found on a reader; the changes are
// written in bounded transactions, so a request over a study of 100,000 cells never holds the
// writer for long.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"

#include "common/status_macros.h"
#include "coordinator/store/sqlite_lifecycle.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/sqlite_store.h"

namespace onset::coordinator {
namespace {

// The rows of `study_id` in one of `states` (by name), in queue order.
absl::StatusOr<std::vector<int64_t>> RowsInStates(db::Connection& db, int64_t study_id,
                                                  const std::set<std::string>& states) {
  nlohmann::json names = nlohmann::json::array();
  for (const std::string& s : states) names.push_back(s);
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT id FROM cells WHERE study_id = ? AND state IN (SELECT value FROM "
                 "json_each(?)) ORDER BY id"));
  stmt.BindAll(study_id, names.dump());
  std::vector<int64_t> rows;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return rows;
    rows.push_back(stmt.Int(0));
  }
}

// Whether the cell row's display axes have every value of `where`.
absl::StatusOr<bool> AxesMatch(db::Connection& db, int64_t row,
                               const std::map<std::string, std::string>& where) {
  if (where.empty()) return true;
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                         db.Prepare("SELECT axes_json FROM cells WHERE id = ?"));
  stmt.BindAll(row);
  ONSET_ASSIGN_OR_RETURN(bool found, stmt.Step());
  if (!found) return false;
  const nlohmann::json axes =
      nlohmann::json::parse(stmt.Text(0), nullptr, /*allow_exceptions=*/false);
  for (const auto& [key, value] : where) {
    if (!axes.is_object() || !axes.contains(key) || !axes[key].is_string() ||
        axes[key].get<std::string>() != value) {
      return false;
    }
  }
  return true;
}

// The candidate rows in the order they are changed: trunks first, so that a branch's trunk is
// queued again (or chosen itself) no later than the branch.
absl::StatusOr<std::vector<int64_t>> TrunksFirst(db::Connection& db,
                                                 const std::vector<int64_t>& rows) {
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                         db.Prepare("SELECT role = 'trunk' FROM cells WHERE id = ?"));
  std::vector<int64_t> trunks;
  std::vector<int64_t> others;
  for (int64_t row : rows) {
    stmt.Reset();
    stmt.BindAll(row);
    ONSET_ASSIGN_OR_RETURN(bool found, stmt.Step());
    (found && stmt.Int(0) != 0 ? trunks : others).push_back(row);
  }
  trunks.insert(trunks.end(), others.begin(), others.end());
  return trunks;
}

// "... after N of M cells were changed" for an error past the first transaction.
absl::Status Partly(const absl::Status& status, int changed, size_t total, const char* what) {
  if (changed == 0) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), " (", changed, " of ", total,
                                                  " cells were ", what, " before)"));
}

}  // namespace

absl::StatusOr<int> SqliteStore::CancelCells(const std::string& study,
                                             const std::vector<std::string>& cell_ids) {
  // Which cells, on a reader: each named cell is one lookup (ids named twice count once), so the
  // work grows with the request; the whole study, with the cells that have not ended. Unknown
  // names are refused before anything changes.
  ONSET_ASSIGN_OR_RETURN(
      const std::vector<int64_t> rows,
      Read<std::vector<int64_t>>([&](db::Connection& db) -> absl::StatusOr<std::vector<int64_t>> {
        ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
        if (cell_ids.empty()) return RowsInStates(db, study_id, {"queued", "backoff", "running"});
        return rows::CellRows(db, study_id, cell_ids);
      }));
  // Then in transactions of kCellsPerWrite, so that leases and heartbeats pass between them;
  // each cell as it is when its transaction runs (one claimed meanwhile is cancelled running).
  int cancelled = 0;
  for (size_t begin = 0; begin < rows.size(); begin += kCellsPerWrite) {
    const size_t end = std::min(rows.size(), begin + kCellsPerWrite);
    absl::StatusOr<int> done = Write<int>([&](db::Connection& db) -> absl::StatusOr<int> {
      const life::Context context = LifeContext(0);
      int n = 0;
      for (size_t i = begin; i < end; ++i) {
        ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, rows[i]));
        ONSET_ASSIGN_OR_RETURN(life::Step step,
                               lifecycle::Apply(db, cell, life::Cancel{}, context));
        n += step.verdict == life::Verdict::kApplied ? 1 : 0;
      }
      return n;
    });
    if (!done.ok()) return Partly(done.status(), cancelled, rows.size(), "cancelled");
    cancelled += *done;
  }
  return cancelled;
}

absl::StatusOr<int> SqliteStore::RerunCells(const RerunRequest& request) {
  std::set<CellState> states(request.states.begin(), request.states.end());
  // No states named: any cell that ended or waits out a backoff.
  if (states.empty()) {
    states = {CellState::kFailed, CellState::kDiverged, CellState::kCancelled,
              CellState::kSucceeded, CellState::kBackoff};
  }
  // A running cell whose cancel is pending is selected as cancelled.
  std::set<std::string> stored;
  for (CellState s : states) stored.insert(CellStateName(s));
  if (states.count(CellState::kCancelled)) stored.insert(CellStateName(CellState::kRunning));

  // The candidates, on a reader: named cells by a lookup each, else the study's cells in the
  // stored states; those whose axes match `where` (axes never change), trunks first.
  ONSET_ASSIGN_OR_RETURN(
      const std::vector<int64_t> candidates,
      Read<std::vector<int64_t>>([&](db::Connection& db) -> absl::StatusOr<std::vector<int64_t>> {
        ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, request.study));
        std::vector<int64_t> rows;
        if (request.cell_ids.empty()) {
          ONSET_ASSIGN_OR_RETURN(rows, RowsInStates(db, study_id, stored));
        } else {
          ONSET_ASSIGN_OR_RETURN(rows, rows::CellRows(db, study_id, request.cell_ids));
        }
        std::vector<int64_t> matching;
        for (int64_t row : rows) {
          ONSET_ASSIGN_OR_RETURN(bool match, AxesMatch(db, row, request.where));
          if (match) matching.push_back(row);
        }
        return TrunksFirst(db, matching);
      }));

  // Then in transactions of kCellsPerWrite, each cell selected by its state when its
  // transaction runs.
  int queued = 0;
  for (size_t begin = 0; begin < candidates.size(); begin += kCellsPerWrite) {
    const size_t end = std::min(candidates.size(), begin + kCellsPerWrite);
    absl::StatusOr<int> done = Write<int>([&](db::Connection& db) -> absl::StatusOr<int> {
      const life::Context context = LifeContext(0);
      std::vector<lifecycle::LoadedCell> chosen;
      std::set<int64_t> chosen_here;
      for (size_t i = begin; i < end; ++i) {
        ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, candidates[i]));
        if (!states.count(life::SelectedAs(cell.life.state, cell.life.intent))) continue;
        chosen_here.insert(cell.row);
        chosen.push_back(std::move(cell));
      }
      // A branch queued again needs a trunk that will produce its branch point: a trunk that
      // has ended (cancelled, failed, diverged, or succeeded and then rerun --fresh) without
      // that checkpoint is queued again with it, resuming from its own checkpoints. Otherwise
      // the branch would wait for ever, and with it `onset run` and every idle-exiting worker.
      // Chosen trunks come first: one chosen in an earlier transaction is queued by now.
      ONSET_ASSIGN_OR_RETURN(
          db::Statement stranded,
          db.Prepare("SELECT t.id FROM cells b JOIN cells t ON t.id = b.trunk_id "
                     "WHERE b.id = ?1 AND b.role = 'branch' AND b.ready = 0 "
                     "AND t.state NOT IN ('queued', 'backoff', 'running')"));
      std::set<int64_t> trunks;
      for (const lifecycle::LoadedCell& cell : chosen) {
        stranded.Reset();
        stranded.BindAll(cell.row);
        ONSET_ASSIGN_OR_RETURN(bool found, stranded.Step());
        const int64_t trunk = found ? stranded.Int(0) : 0;
        if (found && !chosen_here.count(trunk)) trunks.insert(trunk);
      }
      for (int64_t trunk : trunks) {
        ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, trunk));
        ONSET_RETURN_IF_ERROR(lifecycle::Apply(db, cell, life::Rerun{false}, context).status());
      }
      int n = 0;
      for (const lifecycle::LoadedCell& cell : chosen) {
        ONSET_ASSIGN_OR_RETURN(life::Step step,
                               lifecycle::Apply(db, cell, life::Rerun{request.fresh}, context));
        n += step.verdict == life::Verdict::kApplied ? 1 : 0;
      }
      return n;
    });
    if (!done.ok()) return Partly(done.status(), queued, candidates.size(), "queued again");
    queued += *done;
  }
  return queued;
}

}  // namespace onset::coordinator
