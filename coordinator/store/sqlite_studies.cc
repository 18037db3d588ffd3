#include "coordinator/store/sqlite_studies.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/sha256.h"
#include "common/status_macros.h"
#include "coordinator/planning/trunk_plan.h"
#include "coordinator/store/sqlite_lifecycle.h"
#include "coordinator/store/sqlite_trunks.h"
#include "coordinator/study/append_only.h"
#include "coordinator/study/study_file.h"
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

// A submission planned outside this write (NewStudy::planned_against) holds only if the study is
// still as it was then; Aborted "plan it again" otherwise.
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

absl::Status PlanAgain(const std::string& study) {
  return absl::AbortedError("study " + study +
                            " changed while this submission was planned: plan it again");
}

// The study's newest cell row (0: none), and a digest of its trunks' rows: together they say
// whether the study is still as a submission was planned against (cells are never deleted, and
// only trunks change what a plan made of them).
absl::StatusOr<std::pair<int64_t, std::string>> StudyVersion(db::Connection& db, int64_t study_id) {
  ONSET_ASSIGN_OR_RETURN(db::Statement newest,
                         db.Prepare("SELECT COALESCE(MAX(id), 0) FROM cells WHERE study_id = ?"));
  newest.BindAll(study_id);
  ONSET_ASSIGN_OR_RETURN(bool row, newest.Step());
  const int64_t newest_row = row ? newest.Int(0) : 0;
  ONSET_ASSIGN_OR_RETURN(
      db::Statement trunks,
      db.Prepare("SELECT hash, state, tokens_budget, config_json FROM cells WHERE study_id = ? "
                 "AND role = 'trunk' ORDER BY id"));
  trunks.BindAll(study_id);
  std::string all;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool found, trunks.Step());
    if (!found) break;
    all += trunks.Text(0) + "|" + trunks.Text(1) + "|" + std::to_string(trunks.Int(2)) + "|" +
           trunks.Text(3) + "\n";
  }
  return std::make_pair(newest_row, base::Sha256Hex(all));
}

// A branch is stored not ready: it waits for its trunk's row and checkpoint (LinkBranch).
const char* kInsertCell =
    "INSERT INTO cells (study_id, hash, axes_json, config_json, tokens_budget, created_at, "
    "updated_at, devices, non_embedding_params, train_flops_per_token, role, branch_tokens, "
    "ready) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study_id, hash) DO NOTHING";

// Links the stored branch `cell` to its trunk when the trunk's row is stored, and marks it ready
// when the checkpoint it starts from is there: false when the trunk is not stored yet.
absl::StatusOr<bool> LinkBranch(db::Connection& db, int64_t study_id, const CellSpec& cell) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement link,
      db.Prepare("UPDATE cells SET trunk_id = (SELECT t.id FROM cells t WHERE t.study_id = ?1 "
                 "AND t.hash = ?3 AND t.role = 'trunk') WHERE study_id = ?1 AND hash = ?2 "
                 "RETURNING trunk_id"));
  link.BindAll(study_id, cell.id, cell.trunk_id);
  ONSET_ASSIGN_OR_RETURN(bool row, link.Step());
  if (!row || link.IsNull(0)) return false;
  ONSET_RETURN_IF_ERROR(link.Run());
  ONSET_ASSIGN_OR_RETURN(db::Statement set_ready,
                         db.Prepare("UPDATE cells SET ready = " + trunks::BranchReadySql("cells") +
                                    " WHERE study_id = ?1 AND hash = ?2"));
  set_ready.BindAll(study_id, cell.id);
  ONSET_RETURN_IF_ERROR(set_ready.Run());
  return true;
}

// The row of a cell of the study that is not stored yet, as the store will show it: queued.
CellInfo NewCellInfo(const CellSpec& spec, const NewStudy& study, bool waiting_for_trunk) {
  CellInfo cell;
  cell.id = spec.id;
  cell.study = study.name;
  cell.axes = spec.axes;
  cell.axis_aliases = spec.axis_aliases;
  cell.state = CellState::kQueued;
  cell.tokens_budget = spec.tokens_budget;
  cell.devices = std::max(1, study.devices);
  cell.non_embedding_params = spec.non_embedding_params;
  cell.train_flops_per_token = spec.train_flops_per_token;
  cell.role = spec.role;
  cell.trunk_id = spec.role == CellRole::kBranch ? spec.trunk_id : "";
  cell.branch_tokens = spec.role == CellRole::kBranch ? spec.branch_tokens : 0;
  cell.waiting_for_trunk = spec.role == CellRole::kBranch && waiting_for_trunk;
  return cell;
}

// The ids of the submission's new cells, in the file's order.
std::vector<std::string> NewIdsInOrder(const NewStudy& study, const SubmissionWrites& writes) {
  std::unordered_set<std::string> fresh;
  for (const CellSpec* c : writes.new_cells) fresh.insert(c->id);
  std::vector<std::string> ids;
  for (const CellSpec& c : study.cells) {
    if (fresh.erase(c.id) > 0) ids.push_back(c.id);
  }
  return ids;
}

// A study's description never changes silently: a resubmission may leave it out (the stored one
// stays) or repeat it, but one that says something else is refused.
absl::Status CheckDescription(db::Connection& db, int64_t study_id, const NewStudy& study) {
  if (study.description.empty()) return absl::OkStatus();
  ONSET_ASSIGN_OR_RETURN(db::Statement stored,
                         db.Prepare("SELECT description FROM studies WHERE id = ?"));
  stored.BindAll(study_id);
  ONSET_ASSIGN_OR_RETURN(bool row, stored.Step());
  if (!row || stored.Text(0).empty() || stored.Text(0) == study.description) {
    return absl::OkStatus();
  }
  auto shown = [](const std::string& text) {
    constexpr size_t kShown = 120;
    return "'" + (text.size() > kShown ? text.substr(0, kShown) + "..." : text) + "'";
  };
  return absl::FailedPreconditionError(
      "study " + study.name + " is described as " + shown(stored.Text(0)) + "; this file says " +
      shown(study.description) +
      ": a study's description does not change (leave it out of the file to keep the stored "
      "one, or submit under a new study name)");
}

// A study keeps at most kMaxTags tags over all its submissions, and none is ever removed: a
// submission whose tags the study lacks would take it past that is refused, naming the study, how
// many it has and the limit. One that brings no tag it lacks passes, also for a study stored with
// more before this rule. `study_id`: none for a study not stored yet.
absl::Status CheckTags(db::Connection& db, std::optional<int64_t> study_id, const NewStudy& study) {
  if (study.tags.empty()) return absl::OkStatus();
  std::set<std::string> stored;
  if (study_id) {
    ONSET_ASSIGN_OR_RETURN(db::Statement tags,
                           db.Prepare("SELECT tag FROM study_tags WHERE study_id = ?"));
    tags.BindAll(*study_id);
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, tags.Step());
      if (!row) break;
      stored.insert(tags.Text(0));
    }
  }
  std::vector<std::string> fresh;
  for (const std::string& tag : study.tags) {
    if (stored.count(tag) == 0) fresh.push_back(tag);
  }
  std::sort(fresh.begin(), fresh.end());
  fresh.erase(std::unique(fresh.begin(), fresh.end()), fresh.end());
  if (fresh.empty() || stored.size() + fresh.size() <= static_cast<size_t>(kMaxTags)) {
    return absl::OkStatus();
  }
  constexpr size_t kShown = 5;
  std::string named;
  for (size_t i = 0; i < fresh.size() && i < kShown; ++i) named += (i ? ", " : "") + fresh[i];
  if (fresh.size() > kShown) named += ", ...";
  return absl::FailedPreconditionError(
      "study " + study.name + " has " + std::to_string(stored.size()) +
      (stored.size() == 1 ? " tag" : " tags") + " and this file adds " +
      std::to_string(fresh.size()) + " more (" + named + "): a study keeps at most " +
      std::to_string(kMaxTags) +
      " tags over all its submissions and none is ever removed (name only tags it has, or "
      "submit under a new study name)");
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

absl::StatusOr<SubmissionWrites> PlanWrites(db::Connection& db, const NewStudy& study) {
  ONSET_RETURN_IF_ERROR(CheckPlanHolds(db, study));
  SubmissionWrites writes;
  std::unordered_map<std::string, std::string> stored_axes;
  std::unordered_map<std::string, rows::AxisAliases> stored_aliases;
  std::unordered_map<std::string, int64_t> trunk_budgets;  // stored trunks only
  absl::StatusOr<int64_t> existing = rows::StudyId(db, study.name);
  if (existing.ok()) {
    writes.study_id = *existing;
    ONSET_RETURN_IF_ERROR(CheckDescription(db, *existing, study));
    ONSET_RETURN_IF_ERROR(CheckTags(db, *existing, study));
    ONSET_ASSIGN_OR_RETURN(std::vector<CellSpec> cells, rows::LoadCellSpecs(db, *existing));
    // Trunks are not grid points: their axes name no point of the grid.
    std::vector<CellSpec> stored_points, submitted_points;
    ONSET_RETURN_IF_ERROR(CheckAppendOnly(GridPoints(cells, &stored_points),
                                          GridPoints(study.cells, &submitted_points)));
    for (const CellSpec& cell : cells) {
      stored_axes[cell.id] = rows::AxesJson(cell.axes, cell.axis_aliases);
      stored_aliases[cell.id] = cell.axis_aliases;
      if (cell.role == CellRole::kTrunk) trunk_budgets[cell.id] = cell.tokens_budget;
    }
    ONSET_ASSIGN_OR_RETURN(auto version, StudyVersion(db, *existing));
    writes.newest_cell_row = version.first;
  } else if (absl::IsNotFound(existing.status())) {
    ONSET_RETURN_IF_ERROR(CheckTags(db, std::nullopt, study));
  } else {
    return existing.status();
  }

  // A stored cell is shown with the display axes of the latest submission that names it (e.g. a
  // field the study has since made an axis), and keeps the axis aliases of every submission
  // (each records grid points it stands for); its config never changes. A stored trunk given a
  // larger budget is extended (docs/wsd-trunks.md).
  std::unordered_set<std::string> planned;
  std::unordered_set<std::string> trunks_known;
  for (const auto& [id, budget] : trunk_budgets) trunks_known.insert(id);
  for (const CellSpec& cell : study.cells) {
    if (!planned.insert(cell.id).second) continue;
    if (auto it = stored_axes.find(cell.id); it != stored_axes.end()) {
      if (auto trunk = trunk_budgets.find(cell.id); cell.role == CellRole::kTrunk &&
                                                    trunk != trunk_budgets.end() &&
                                                    cell.tokens_budget > trunk->second) {
        writes.extended_trunks.push_back(&cell);
      }
      std::string axes_json = rows::AxesJson(
          cell.axes, rows::MergeAxisAliases(stored_aliases[cell.id], cell.axis_aliases, cell.axes));
      if (it->second != axes_json) writes.relabels.emplace_back(&cell, std::move(axes_json));
      continue;
    }
    if (cell.role == CellRole::kTrunk) trunks_known.insert(cell.id);
    writes.new_cells.push_back(&cell);
  }
  for (const CellSpec* cell : writes.new_cells) {
    if (cell->role == CellRole::kBranch && !trunks_known.count(cell->trunk_id)) {
      return absl::InvalidArgumentError("cell " + cell->id + " is a branch of trunk " +
                                        cell->trunk_id + ", which study " + study.name +
                                        " does not have");
    }
  }
  return writes;
}

absl::StatusOr<AddStudyResult> PreviewResult(db::Connection& db, const NewStudy& study,
                                             const SubmissionWrites& writes, int64_t now) {
  AddStudyResult result;
  int new_points = 0;  // new cells that are grid points (trunks are not counted)
  for (const CellSpec* c : writes.new_cells) new_points += c->role != CellRole::kTrunk ? 1 : 0;
  std::unordered_map<std::string, CellInfo> stored;
  if (writes.study_id) {
    ONSET_ASSIGN_OR_RETURN(result.study, rows::LoadStudy(db, *writes.study_id));
    ONSET_ASSIGN_OR_RETURN(std::vector<CellInfo> cells, rows::LoadCells(db, *writes.study_id));
    for (CellInfo& c : cells) stored.emplace(c.id, std::move(c));
  } else {
    result.study.name = study.name;
    result.study.created_unix_ms = now;
  }
  if (!study.description.empty()) result.study.description = study.description;
  std::vector<std::string> tags = result.study.tags;
  tags.insert(tags.end(), study.tags.begin(), study.tags.end());
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  result.study.tags = std::move(tags);
  result.study.source_name = study.source_name;
  result.study.source_yaml = study.source_yaml;
  result.study.cells_total += new_points;
  if (new_points > 0) result.study.cells_by_state[CellStateName(CellState::kQueued)] += new_points;
  // What the writes change of the stored cells.
  for (const auto& [cell, axes_json] : writes.relabels) {
    CellInfo& info = stored[cell->id];
    info.axes = rows::ParseAxes(axes_json);
    info.axis_aliases = rows::ParseAxisAliases(axes_json);
  }
  for (const CellSpec* trunk : writes.extended_trunks) {
    CellInfo& info = stored[trunk->id];
    info.tokens_budget = trunk->tokens_budget;
    if (info.state == CellState::kSucceeded) {
      info.state = CellState::kQueued;
      info.failures = 0;
    }
  }
  // A new branch waits for its trunk's checkpoint unless a stored trunk reported it.
  std::unordered_map<std::string, bool> ready;
  ONSET_ASSIGN_OR_RETURN(
      db::Statement checkpoint,
      db.Prepare("SELECT 1 FROM cells t JOIN metrics m ON m.cell_id = t.id WHERE t.study_id = ? "
                 "AND t.hash = ? AND t.role = 'trunk' AND m.name = ? AND m.tokens = ?"));
  for (const CellSpec* c : writes.new_cells) {
    if (c->role != CellRole::kBranch || !writes.study_id) continue;
    checkpoint.Reset();
    checkpoint.BindAll(*writes.study_id, c->trunk_id, std::string(trunks::kCheckpointMetric),
                       c->branch_tokens);
    ONSET_ASSIGN_OR_RETURN(bool found, checkpoint.Step());
    ready[c->id] = found;
  }
  for (const CellSpec& cell : study.cells) {
    if (auto it = stored.find(cell.id); it != stored.end()) {
      result.cells.push_back(it->second);
    } else {
      result.cells.push_back(NewCellInfo(cell, study, !ready[cell.id]));
    }
  }
  result.new_cell_ids = NewIdsInOrder(study, writes);
  result.cells_added = static_cast<int>(result.new_cell_ids.size());
  return result;
}

absl::StatusOr<int64_t> ApplyStudy(db::Connection& db, const NewStudy& study,
                                   const SubmissionWrites& writes, int64_t now) {
  absl::StatusOr<int64_t> existing = rows::StudyId(db, study.name);
  if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
  if (existing.ok() != writes.study_id.has_value() ||
      (existing.ok() && *existing != *writes.study_id)) {
    return PlanAgain(study.name);
  }
  int64_t study_id = 0;
  if (existing.ok()) {
    study_id = *existing;
    // Nothing was added, and no trunk changed, since the plan.
    ONSET_ASSIGN_OR_RETURN(auto version, StudyVersion(db, study_id));
    if (version.first != writes.newest_cell_row) return PlanAgain(study.name);
    ONSET_ASSIGN_OR_RETURN(db::Statement update,
                           db.Prepare("UPDATE studies SET description = CASE WHEN ?1 = '' "
                                      "THEN description ELSE ?1 END, source_name = ?2, "
                                      "source_yaml = ?3 WHERE id = ?4"));
    update.BindAll(study.description, study.source_name, study.source_yaml, study_id);
    ONSET_RETURN_IF_ERROR(update.Run());
  } else {
    ONSET_ASSIGN_OR_RETURN(
        db::Statement insert,
        db.Prepare("INSERT INTO studies (name, description, source_name, "
                   "source_yaml, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id"));
    insert.BindAll(study.name, study.description, study.source_name, study.source_yaml, now);
    ONSET_ASSIGN_OR_RETURN(bool row, insert.Step());
    if (!row) return absl::InternalError("INSERT INTO studies returned no id");
    study_id = insert.Int(0);
    ONSET_RETURN_IF_ERROR(insert.Run());
  }
  // Checked again in this write: the limit holds whatever was stored since the plan.
  ONSET_RETURN_IF_ERROR(CheckTags(db, study_id, study));
  ONSET_ASSIGN_OR_RETURN(
      db::Statement tag,
      db.Prepare("INSERT INTO study_tags (study_id, tag) VALUES (?, ?) ON CONFLICT DO NOTHING"));
  for (const std::string& t : study.tags) {
    tag.Reset();
    tag.BindAll(study_id, t);
    ONSET_RETURN_IF_ERROR(tag.Run());
  }
  // A stored trunk given a larger budget trains on from its last checkpoint: a succeeded one is
  // queued again (the lifecycle's Extend).
  ONSET_ASSIGN_OR_RETURN(
      db::Statement extend,
      db.Prepare("UPDATE cells SET config_json = ?1, tokens_budget = ?2, updated_at = ?3 "
                 "WHERE study_id = ?4 AND hash = ?5 AND role = 'trunk' RETURNING id"));
  for (const CellSpec* trunk : writes.extended_trunks) {
    extend.Reset();
    extend.BindAll(trunk->config_json, trunk->tokens_budget, now, study_id, trunk->id);
    ONSET_ASSIGN_OR_RETURN(bool found, extend.Step());
    if (!found) continue;
    const int64_t row = extend.Int(0);
    ONSET_RETURN_IF_ERROR(extend.Run());
    ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, row));
    life::Context context;
    context.now_unix_ms = now;
    ONSET_RETURN_IF_ERROR(lifecycle::Apply(db, cell, life::Extend{}, context).status());
  }
  return study_id;
}

absl::Status ApplyRelabels(db::Connection& db, int64_t study_id,
                           const std::vector<std::pair<const CellSpec*, std::string>>& relabels) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement relabel,
      db.Prepare("UPDATE cells SET axes_json = ? WHERE study_id = ? AND hash = ?"));
  for (const auto& [cell, axes_json] : relabels) {
    relabel.Reset();
    relabel.BindAll(axes_json, study_id, cell->id);
    ONSET_RETURN_IF_ERROR(relabel.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<const CellSpec*>> ApplyCells(db::Connection& db, int64_t study_id,
                                                        const NewStudy& study,
                                                        const std::vector<const CellSpec*>& cells,
                                                        int64_t now) {
  ONSET_ASSIGN_OR_RETURN(db::Statement insert, db.Prepare(kInsertCell));
  std::vector<const CellSpec*> unlinked;
  for (const CellSpec* cell : cells) {
    const bool branch = cell->role == CellRole::kBranch;
    insert.Reset();
    insert.BindAll(study_id, cell->id, rows::AxesJson(cell->axes, cell->axis_aliases),
                   cell->config_json, cell->tokens_budget, now, now, std::max(1, study.devices),
                   cell->non_embedding_params, cell->train_flops_per_token,
                   std::string(wire::RoleName(cell->role)),
                   branch ? cell->branch_tokens : int64_t{0}, branch ? 0 : 1);
    ONSET_RETURN_IF_ERROR(insert.Run());
    if (db.Changes() == 0 || !branch) continue;
    ONSET_ASSIGN_OR_RETURN(bool linked, LinkBranch(db, study_id, *cell));
    if (!linked) unlinked.push_back(cell);
  }
  return unlinked;
}

absl::Status LinkBranches(db::Connection& db, int64_t study_id, const std::string& study,
                          const std::vector<const CellSpec*>& branches) {
  for (const CellSpec* branch : branches) {
    ONSET_ASSIGN_OR_RETURN(bool linked, LinkBranch(db, study_id, *branch));
    if (!linked) {
      return absl::InvalidArgumentError("cell " + branch->id + " is a branch of trunk " +
                                        branch->trunk_id + ", which study " + study +
                                        " does not have");
    }
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

std::vector<std::string> NewCellIds(const NewStudy& study, const SubmissionWrites& writes) {
  return NewIdsInOrder(study, writes);
}

}  // namespace onset::coordinator::studies
