#include "coordinator/store/sqlite_studies.h"

#include <algorithm>

#include "common/status_macros.h"
#include "coordinator/planning/trunk_plan.h"
#include "coordinator/store/sqlite_lifecycle.h"
#include "coordinator/store/sqlite_trunks.h"
#include "coordinator/study/append_only.h"
#include "proto/cell_names.h"

namespace onset::coordinator::studies {
namespace {

// The cells of `cells` that are grid points (every one but the trunks); `storage` holds them
// when some are left out.
const std::vector<CellSpec>& GridPoints(const std::vector<CellSpec>& cells,
                                        std::vector<CellSpec>* storage) {
  if (std::none_of(cells.begin(), cells.end(),
                   [](const CellSpec& c) { return c.role == CellRole::kTrunk; })) {
    return cells;
  }
  for (const CellSpec& c : cells) {
    if (c.role != CellRole::kTrunk) storage->push_back(c);
  }
  return *storage;
}

}  // namespace

absl::Status CheckRoles(const std::vector<CellSpec>& cells) {
  for (const CellSpec& c : cells) {
    if (c.role == CellRole::kBranch && c.trunk_id.empty()) {
      return absl::InvalidArgumentError("cell " + c.id + " is a branch without a trunk id");
    }
    if (c.role == CellRole::kBranch && c.branch_tokens < 0) {
      return absl::InvalidArgumentError("cell " + c.id + " branches at negative tokens " +
                                        std::to_string(c.branch_tokens));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPlanHolds(db::Connection& db, const NewStudy& study) {
  if (!study.planned_against) return absl::OkStatus();
  absl::StatusOr<int64_t> existing = rows::StudyId(db, study.name);
  std::vector<StoredPlanCell> now_stored;
  if (existing.ok()) {
    ONSET_ASSIGN_OR_RETURN(now_stored, rows::PlanCells(db, *existing));
  }
  if (PlanInputDigest(now_stored) != *study.planned_against) {
    return absl::AbortedError("study " + study.name +
                              " changed while this submission was planned: plan it again");
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> UpsertStudy(db::Connection& db, const NewStudy& study, int64_t now,
                                    StoredCells* stored) {
  absl::StatusOr<int64_t> existing = rows::StudyId(db, study.name);
  if (existing.ok()) {
    ONSET_ASSIGN_OR_RETURN(std::vector<CellSpec> cells, rows::LoadCellSpecs(db, *existing));
    // Trunks are not grid points: their axes name no point of the grid.
    std::vector<CellSpec> stored_points, submitted_points;
    ONSET_RETURN_IF_ERROR(CheckAppendOnly(GridPoints(cells, &stored_points),
                                          GridPoints(study.cells, &submitted_points)));
    for (const CellSpec& cell : cells) {
      stored->axes_json[cell.id] = rows::AxesJson(cell.axes, cell.axis_aliases);
      stored->aliases[cell.id] = cell.axis_aliases;
      if (cell.role == CellRole::kTrunk) stored->trunk_budgets[cell.id] = cell.tokens_budget;
    }
    ONSET_ASSIGN_OR_RETURN(db::Statement update,
                           db.Prepare("UPDATE studies SET description = ?, source_name = ?, "
                                      "source_yaml = ? WHERE id = ?"));
    update.BindAll(study.description, study.source_name, study.source_yaml, *existing);
    ONSET_RETURN_IF_ERROR(update.Run());
    return *existing;
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  ONSET_ASSIGN_OR_RETURN(
      db::Statement insert,
      db.Prepare("INSERT INTO studies (name, description, source_name, "
                 "source_yaml, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id"));
  insert.BindAll(study.name, study.description, study.source_name, study.source_yaml, now);
  ONSET_ASSIGN_OR_RETURN(bool row, insert.Step());
  if (!row) return absl::InternalError("INSERT INTO studies returned no id");
  const int64_t study_id = insert.Int(0);
  ONSET_RETURN_IF_ERROR(insert.Run());
  return study_id;
}

absl::StatusOr<std::vector<const CellSpec*>> WriteCells(db::Connection& db, int64_t study_id,
                                                        const NewStudy& study, int64_t now,
                                                        StoredCells* stored,
                                                        AddStudyResult* result) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement insert_cell,
      db.Prepare("INSERT INTO cells (study_id, hash, axes_json, config_json, tokens_budget, "
                 "created_at, updated_at, devices, non_embedding_params, "
                 "train_flops_per_token, role, branch_tokens) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT (study_id, hash) DO NOTHING"));
  // A stored cell is shown with the display axes of the latest submission that names it (e.g. a
  // field the study has since made an axis), and keeps the axis aliases of every submission
  // (each records grid points it stands for); its config never changes.
  ONSET_ASSIGN_OR_RETURN(
      db::Statement relabel_cell,
      db.Prepare("UPDATE cells SET axes_json = ? WHERE study_id = ? AND hash = ?"));
  // A stored trunk given a larger budget is extended: it trains on from its last checkpoint, so
  // a succeeded one is queued again (docs/wsd-trunks.md; the lifecycle's Extend).
  ONSET_ASSIGN_OR_RETURN(
      db::Statement extend_trunk,
      db.Prepare("UPDATE cells SET config_json = ?1, tokens_budget = ?2, updated_at = ?3 "
                 "WHERE study_id = ?4 AND hash = ?5 AND role = 'trunk' RETURNING id"));
  std::vector<const CellSpec*> new_branches;
  for (const CellSpec& cell : study.cells) {
    if (auto it = stored->axes_json.find(cell.id); it != stored->axes_json.end()) {
      if (auto trunk = stored->trunk_budgets.find(cell.id); cell.role == CellRole::kTrunk &&
                                                            trunk != stored->trunk_budgets.end() &&
                                                            cell.tokens_budget > trunk->second) {
        extend_trunk.Reset();
        extend_trunk.BindAll(cell.config_json, cell.tokens_budget, now, study_id, cell.id);
        ONSET_ASSIGN_OR_RETURN(bool extended, extend_trunk.Step());
        if (extended) {
          const int64_t row = extend_trunk.Int(0);
          ONSET_RETURN_IF_ERROR(extend_trunk.Run());
          ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell trunk, lifecycle::LoadCell(db, row));
          life::Context context;
          context.now_unix_ms = now;
          ONSET_RETURN_IF_ERROR(lifecycle::Apply(db, trunk, life::Extend{}, context).status());
        }
        trunk->second = cell.tokens_budget;
      }
      const std::string axes_json = rows::AxesJson(
          cell.axes,
          rows::MergeAxisAliases(stored->aliases[cell.id], cell.axis_aliases, cell.axes));
      if (it->second == axes_json) continue;
      relabel_cell.Reset();
      relabel_cell.BindAll(axes_json, study_id, cell.id);
      ONSET_RETURN_IF_ERROR(relabel_cell.Run());
      continue;
    }
    const std::string axes_json = rows::AxesJson(cell.axes, cell.axis_aliases);
    insert_cell.Reset();
    insert_cell.BindAll(study_id, cell.id, axes_json, cell.config_json, cell.tokens_budget, now,
                        now, std::max(1, study.devices), cell.non_embedding_params,
                        cell.train_flops_per_token, std::string(wire::RoleName(cell.role)),
                        cell.role == CellRole::kBranch ? cell.branch_tokens : int64_t{0});
    ONSET_RETURN_IF_ERROR(insert_cell.Run());
    if (db.Changes() > 0) {
      ++result->cells_added;
      result->new_cell_ids.push_back(cell.id);
      if (cell.role == CellRole::kBranch) new_branches.push_back(&cell);
    }
  }
  return new_branches;
}

absl::Status LinkBranches(db::Connection& db, int64_t study_id, const std::string& study,
                          const std::vector<const CellSpec*>& branches) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement link,
      db.Prepare("UPDATE cells SET trunk_id = (SELECT t.id FROM cells t WHERE t.study_id = ?1 "
                 "AND t.hash = ?3 AND t.role = 'trunk') WHERE study_id = ?1 AND hash = ?2 "
                 "RETURNING trunk_id"));
  ONSET_ASSIGN_OR_RETURN(db::Statement set_ready,
                         db.Prepare("UPDATE cells SET ready = " + trunks::BranchReadySql("cells") +
                                    " WHERE study_id = ?1 AND hash = ?2"));
  for (const CellSpec* branch : branches) {
    link.Reset();
    link.BindAll(study_id, branch->id, branch->trunk_id);
    ONSET_ASSIGN_OR_RETURN(bool row, link.Step());
    if (!row || link.IsNull(0)) {
      return absl::InvalidArgumentError("cell " + branch->id + " is a branch of trunk " +
                                        branch->trunk_id + ", which study " + study +
                                        " does not have");
    }
    ONSET_RETURN_IF_ERROR(link.Run());
    set_ready.Reset();
    set_ready.BindAll(study_id, branch->id);
    ONSET_RETURN_IF_ERROR(set_ready.Run());
  }
  return absl::OkStatus();
}

absl::Status LoadSubmitted(db::Connection& db, int64_t study_id, const NewStudy& study,
                           AddStudyResult* result) {
  ONSET_ASSIGN_OR_RETURN(result->study, rows::LoadStudy(db, study_id));
  ONSET_ASSIGN_OR_RETURN(std::vector<CellInfo> all, rows::LoadCells(db, study_id));
  std::unordered_map<std::string, const CellInfo*> by_id;
  for (const CellInfo& c : all) by_id[c.id] = &c;
  for (const CellSpec& cell : study.cells) {
    auto it = by_id.find(cell.id);
    if (it != by_id.end()) result->cells.push_back(*it->second);
  }
  return absl::OkStatus();
}

}  // namespace onset::coordinator::studies
