#include "coordinator/store/sqlite_rows.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "base/metric_names.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "coordinator/study/model_cost.h"

namespace onset::coordinator::rows {
namespace {

// The columns CellInfo is read from, in order; `c` is cells, `s` is studies.
constexpr const char* kCellColumns = R"sql(
  c.hash, s.name, c.axes_json, c.state, c.tokens_done, c.tokens_budget, c.latest_loss,
  (SELECT COUNT(*) FROM attempts a WHERE a.cell_id = c.id),
  CASE WHEN c.note <> '' THEN c.note
  ELSE COALESCE((SELECT CASE WHEN a.outcome = 'succeeded' THEN '' ELSE a.reason END
                 FROM attempts a WHERE a.cell_id = c.id AND a.ended_at IS NOT NULL
                 ORDER BY a.attempt DESC LIMIT 1), '') END,
  c.tokens_per_second, c.failures, c.retry_at, c.devices, c.non_embedding_params,
  c.train_flops_per_token, CASE WHEN c.non_embedding_params IS NULL THEN c.config_json END,
  c.role, COALESCE((SELECT t.hash FROM cells t WHERE t.id = c.trunk_id), ''), c.branch_tokens,
  c.role = 'branch' AND c.state IN ('queued', 'backoff') AND c.ready = 0)sql";
constexpr int kCellColumnCount = 20;

std::map<std::string, std::string> AxesOf(const nlohmann::json& parsed) {
  std::map<std::string, std::string> axes;
  if (parsed.is_object()) {
    for (const auto& [k, v] : parsed.items()) {
      if (v.is_string()) axes[k] = v.get<std::string>();
    }
  }
  return axes;
}

AxisAliases AliasesOf(const nlohmann::json& parsed) {
  AxisAliases aliases;
  if (!parsed.is_object()) return aliases;
  auto it = parsed.find(kAxisAliasesKey);
  if (it == parsed.end() || !it->is_object()) return aliases;
  for (const auto& [axis, values] : it->items()) {
    if (!values.is_array()) continue;
    for (const nlohmann::json& v : values) {
      if (v.is_string()) aliases[axis].push_back(v.get<std::string>());
    }
  }
  return aliases;
}

CellInfo ReadCell(const db::Statement& row) {
  CellInfo cell;
  cell.id = row.Text(0);
  cell.study = row.Text(1);
  const nlohmann::json axes =
      nlohmann::json::parse(row.Text(2), nullptr, /*allow_exceptions=*/false);
  cell.axes = AxesOf(axes);
  cell.axis_aliases = AliasesOf(axes);
  cell.state = CellStateFromName(row.Text(3)).value_or(CellState::kQueued);
  cell.tokens_done = row.Int(4);
  cell.tokens_budget = row.Int(5);
  if (!row.IsNull(6)) cell.latest_loss = row.Double(6);
  cell.attempts = static_cast<int>(row.Int(7));
  cell.last_error = row.Text(8);
  cell.tokens_per_second = row.Double(9);
  cell.failures = static_cast<int>(row.Int(10));
  cell.retry_at_unix_ms = row.Int(11);
  cell.devices = static_cast<int>(row.Int(12));
  if (!row.IsNull(13)) {
    cell.non_embedding_params = row.Int(13);
    cell.train_flops_per_token = row.Double(14);
  } else {
    // A cell stored before its cost was (schema version 4): computed from its config.
    const ModelCost cost = ModelCostOf(row.Text(15));
    cell.non_embedding_params = cost.non_embedding_params;
    cell.train_flops_per_token = cost.train_flops_per_token;
  }
  cell.role = wire::RoleFromName(row.Text(16)).value_or(CellRole::kCell);
  cell.trunk_id = row.Text(17);
  cell.branch_tokens = row.Int(18);
  cell.waiting_for_trunk = row.Int(19) != 0;
  return cell;
}

}  // namespace

std::map<std::string, std::string> ParseAxes(const std::string& axes_json) {
  return AxesOf(nlohmann::json::parse(axes_json, nullptr, /*allow_exceptions=*/false));
}

AxisAliases ParseAxisAliases(const std::string& axes_json) {
  return AliasesOf(nlohmann::json::parse(axes_json, nullptr, /*allow_exceptions=*/false));
}

std::string AxesJson(const std::map<std::string, std::string>& axes, const AxisAliases& aliases) {
  nlohmann::json j(axes);
  if (!aliases.empty()) j[kAxisAliasesKey] = aliases;
  return j.dump();
}

AxisAliases MergeAxisAliases(AxisAliases stored, const AxisAliases& more,
                             const std::map<std::string, std::string>& axes) {
  for (const auto& [axis, values] : more) {
    for (const std::string& v : values) {
      std::vector<std::string>& to = stored[axis];
      if (std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
    }
  }
  for (auto it = stored.begin(); it != stored.end();) {
    std::vector<std::string>& values = it->second;
    if (auto own = axes.find(it->first); own != axes.end()) {
      values.erase(std::remove(values.begin(), values.end(), own->second), values.end());
    }
    it = values.empty() ? stored.erase(it) : std::next(it);
  }
  return stored;
}

absl::StatusOr<int64_t> StudyId(db::Connection& db, const std::string& name) {
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt, db.Prepare("SELECT id FROM studies WHERE name = ?"));
  stmt.BindAll(name);
  ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::NotFoundError("no study named '" + name + "'");
  return stmt.Int(0);
}

absl::StatusOr<StudyInfo> LoadStudy(db::Connection& db, int64_t study_id, bool with_source) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT name, description, source_name, CASE WHEN ?2 THEN source_yaml ELSE '' "
                 "END, created_at FROM studies WHERE id = ?1"));
  stmt.BindAll(study_id, int64_t{with_source});
  ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::NotFoundError("no study with id " + std::to_string(study_id));
  StudyInfo info;
  info.row = study_id;
  info.name = stmt.Text(0);
  info.description = stmt.Text(1);
  info.source_name = stmt.Text(2);
  info.source_yaml = stmt.Text(3);
  info.created_unix_ms = stmt.Int(4);
  ONSET_ASSIGN_OR_RETURN(db::Statement tags,
                         db.Prepare("SELECT tag FROM study_tags WHERE study_id = ? ORDER BY tag"));
  tags.BindAll(study_id);
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool more, tags.Step());
    if (!more) break;
    info.tags.push_back(tags.Text(0));
  }

  ONSET_ASSIGN_OR_RETURN(
      db::Statement counts,
      // Trunks are jobs, not grid points: the study's counts leave them out.
      db.Prepare("SELECT state, COUNT(*) FROM cells WHERE study_id = ? AND role <> 'trunk' "
                 "GROUP BY state"));
  counts.BindAll(study_id);
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool more, counts.Step());
    if (!more) break;
    info.cells_by_state[counts.Text(0)] = static_cast<int>(counts.Int(1));
    info.cells_total += static_cast<int>(counts.Int(1));
  }
  info.alert = RepeatedFailureAlert(db, study_id);
  info.waiting = WaitingForDevices(db, study_id);
  return info;
}

std::string WaitingForDevices(db::Connection& db, int64_t study_id) {
  // A worker that registered no device names runs `slots` jobs of one device each.
  absl::StatusOr<db::Statement> stmt = db.Prepare(R"sql(
      WITH largest AS (
        SELECT MAX(CASE WHEN devices = '' THEN slots
                        ELSE LENGTH(devices) - LENGTH(REPLACE(devices, ',', '')) + 1 END) AS n
        FROM workers)
      SELECT COUNT(*), MIN(c.devices), MAX(c.devices), largest.n FROM cells c, largest
      WHERE c.study_id = ? AND c.state IN ('queued', 'backoff') AND c.devices > largest.n)sql");
  if (!stmt.ok()) return "";
  stmt->BindAll(study_id);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok() || !*row || stmt->Int(0) == 0) return "";
  const int64_t cells = stmt->Int(0), fewest = stmt->Int(1), most = stmt->Int(2);
  return std::to_string(cells) + (cells == 1 ? " queued cell needs " : " queued cells need ") +
         (fewest == most ? std::to_string(most)
                         : std::to_string(fewest) + " to " + std::to_string(most)) +
         " devices; the largest registered worker has " + std::to_string(stmt->Int(3));
}

std::string JoinDevices(const std::vector<std::string>& devices) {
  std::string out;
  for (const std::string& d : devices) out += (out.empty() ? "" : ",") + d;
  return out;
}

std::vector<std::string> SplitDevices(const std::string& stored) {
  std::vector<std::string> devices;
  size_t start = 0;
  while (start < stored.size()) {
    size_t comma = stored.find(',', start);
    if (comma == std::string::npos) comma = stored.size();
    if (comma > start) devices.push_back(stored.substr(start, comma - start));
    start = comma + 1;
  }
  return devices;
}

std::string RepeatedFailureAlert(db::Connection& db, int64_t study_id) {
  absl::StatusOr<db::Statement> stmt = db.Prepare(
      "SELECT a.failure_class, a.reason, c.hash FROM attempts a JOIN cells c ON c.id = a.cell_id "
      "WHERE c.study_id = ? AND a.ended_at IS NOT NULL AND a.outcome IN ('failed', 'lost') "
      "ORDER BY a.ended_at DESC, a.id DESC LIMIT ?");
  if (!stmt.ok()) return "";
  stmt->BindAll(study_id, kRepeatedFailures);
  std::string first_class, first_reason;
  std::set<std::string> cells;
  int n = 0;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok() || !*row) break;
    if (n == 0) {
      first_class = stmt->Text(0);
      first_reason = stmt->Text(1);
    } else if (stmt->Text(0) != first_class || stmt->Text(1) != first_reason) {
      return "";
    }
    cells.insert(stmt->Text(2));
    ++n;
  }
  if (n < kRepeatedFailures) return "";
  // A reason is what a worker said, of any length: the alert, in every listing, keeps its start.
  const std::string& why = first_reason.empty() ? first_class : first_reason;
  const std::string_view shown = common::TruncateUtf8(why, kMaxAlertReasonBytes);
  return std::to_string(n) + " attempts in a row (" + std::to_string(cells.size()) +
         " cells) failed alike: " + std::string(shown) + (shown.size() < why.size() ? "..." : "");
}

absl::StatusOr<std::vector<CellInfo>> LoadCells(db::Connection& db, int64_t study_id,
                                                const CellPage& page, int64_t* next_after,
                                                bool without_trunks) {
  // One row more than the page holds tells whether another page follows.
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare(std::string("SELECT ") + kCellColumns +
                 ", c.id FROM cells c JOIN studies s ON s.id = c.study_id"
                 " WHERE c.study_id = ? AND c.id > ? AND (? = 0 OR c.role <> 'trunk')"
                 " ORDER BY c.id LIMIT ?"));
  stmt.BindAll(study_id, page.after, int64_t{without_trunks},
               page.limit > 0 ? int64_t{page.limit} + 1 : int64_t{-1});
  std::vector<CellInfo> cells;
  int64_t last = 0;
  if (next_after != nullptr) *next_after = 0;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return cells;
    if (page.limit > 0 && static_cast<int>(cells.size()) == page.limit) {
      if (next_after != nullptr) *next_after = last;
      return cells;
    }
    cells.push_back(ReadCell(stmt));
    last = stmt.Int(kCellColumnCount);
    cells.back().queue_position = last;
  }
}

absl::StatusOr<std::vector<CellInfo>> FindCells(db::Connection& db, int64_t study_id,
                                                const CellFilter& filter) {
  // The ids travel as a JSON array bound to one parameter: the SQL text never changes.
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare(std::string("SELECT ") + kCellColumns +
                 " FROM cells c JOIN studies s ON s.id = c.study_id WHERE c.study_id = ?1 AND "
                 "((?2 AND c.state = 'running') OR c.hash IN (SELECT value FROM json_each(?3))) "
                 "ORDER BY c.id"));
  stmt.BindAll(study_id, int64_t{filter.running}, nlohmann::json(filter.ids).dump());
  std::vector<CellInfo> cells;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return cells;
    cells.push_back(ReadCell(stmt));
  }
}

absl::StatusOr<std::vector<CellSpec>> LoadCellSpecs(db::Connection& db, int64_t study_id) {
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                         db.Prepare("SELECT hash, axes_json, config_json, tokens_budget, role "
                                    "FROM cells WHERE study_id = ? ORDER BY id"));
  stmt.BindAll(study_id);
  std::vector<CellSpec> cells;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return cells;
    CellSpec cell;
    cell.id = stmt.Text(0);
    cell.axes = ParseAxes(stmt.Text(1));
    cell.axis_aliases = ParseAxisAliases(stmt.Text(1));
    cell.config_json = stmt.Text(2);
    cell.tokens_budget = stmt.Int(3);
    cell.role = wire::RoleFromName(stmt.Text(4)).value_or(CellRole::kCell);
    cells.push_back(std::move(cell));
  }
}

absl::StatusOr<std::vector<StoredPlanCell>> PlanCells(db::Connection& db, int64_t study_id) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT c.hash, c.role, COALESCE(t.hash, ''), c.branch_tokens, c.state, "
                 "c.tokens_done, c.tokens_budget, CASE WHEN c.role = 'trunk' THEN c.config_json "
                 "ELSE '' END FROM cells c LEFT JOIN cells t ON t.id = c.trunk_id "
                 "WHERE c.study_id = ? ORDER BY c.id"));
  stmt.BindAll(study_id);
  std::vector<StoredPlanCell> cells;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return cells;
    StoredPlanCell& cell = cells.emplace_back();
    cell.id = stmt.Text(0);
    cell.role = wire::RoleFromName(stmt.Text(1)).value_or(CellRole::kCell);
    cell.trunk_id = stmt.Text(2);
    cell.branch_tokens = stmt.Int(3);
    cell.state = CellStateFromName(stmt.Text(4)).value_or(CellState::kQueued);
    cell.tokens_done = stmt.Int(5);
    cell.tokens_budget = stmt.Int(6);
    cell.config_json = stmt.Text(7);
  }
}

absl::StatusOr<std::vector<int64_t>> CellRows(db::Connection& db, int64_t study_id,
                                              const std::vector<std::string>& cell_ids) {
  std::vector<int64_t> rows;
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt, db.Prepare(CellByIdSql()));
  for (const std::string& id : cell_ids) {
    stmt.Reset();
    stmt.BindAll(study_id, id);
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return absl::NotFoundError("the study has no cell " + id);
    rows.push_back(stmt.Int(0));
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

const char* CellByIdSql() { return "SELECT id FROM cells WHERE study_id = ?1 AND hash = ?2"; }

const char* CellsByPrefixSql(bool any_study) {
  if (any_study) {
    return "SELECT c.id, s.name, c.hash FROM cells c INDEXED BY cells_by_hash JOIN studies s "
           "ON s.id = c.study_id WHERE c.hash >= ?1 AND c.hash < ?2 ORDER BY c.hash LIMIT 20";
  }
  return "SELECT c.id, s.name, c.hash FROM studies s JOIN cells c ON c.study_id = s.id "
         "WHERE s.name = ?3 AND c.hash >= ?1 AND c.hash < ?2 ORDER BY c.hash LIMIT 20";
}

absl::StatusOr<std::vector<ResumePoint>> ResumePoints(db::Connection& db, int64_t cell_row,
                                                      int limit) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT a.attempt, m.tokens, a.own_checkpoint_dir, m.value FROM metrics m "
                 "JOIN attempts a ON a.id = m.attempt_id WHERE m.cell_id = ? AND m.name = ? "
                 "ORDER BY m.tokens DESC LIMIT ?"));
  stmt.BindAll(cell_row, std::string(metric::kCheckpointBytes), static_cast<int64_t>(limit));
  std::vector<ResumePoint> points;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return points;
    points.push_back(ResumePoint{static_cast<int>(stmt.Int(0)), stmt.Int(1), stmt.Int(2) != 0,
                                 stmt.IsNull(3) ? 0 : static_cast<int64_t>(stmt.Double(3))});
  }
}

}  // namespace onset::coordinator::rows
