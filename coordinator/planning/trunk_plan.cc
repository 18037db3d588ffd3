#include "coordinator/planning/trunk_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "model/config/wsd_trunk.h"

namespace onset::coordinator {
namespace {

using model::CellConfig;
using model::TrunkSpec;

// Display axes that do not tell grid points apart for sharing: the budget (the `tokens` axis)
// and the fields a budget's own run may set differently without changing its stable phase.
const std::set<std::string>& BudgetAxes() {
  static const std::set<std::string> axes = [] {
    std::set<std::string> names = {"tokens"};
    for (std::string_view field : model::BudgetFields()) names.emplace(field);
    return names;
  }();
  return axes;
}

std::string PointKey(const std::map<std::string, std::string>& axes) {
  std::string key;
  for (const auto& [axis, value] : axes) {
    if (BudgetAxes().count(axis) == 0) key += axis + "=" + value + " ";
  }
  return key;
}

// The trunk ended for good without succeeding (failed, diverged or cancelled): a new budget
// cannot branch from it until a rerun queues it again.
bool EndedUnsucceeded(CellState state) {
  return wire::Ended(ToWire(state)) && state != CellState::kSucceeded;
}

// Whether every element of `need` is in the sorted `have`.
bool Covers(const std::vector<int64_t>& have, const std::vector<int64_t>& need) {
  return std::all_of(need.begin(), need.end(), [&have](int64_t t) {
    return std::binary_search(have.begin(), have.end(), t);
  });
}

void InsertSorted(std::vector<int64_t>* v, const std::vector<int64_t>& add) {
  v->insert(v->end(), add.begin(), add.end());
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

std::string Tokens(int64_t t) { return std::to_string(t); }

// Eval step ends one plan computes at most, over all its trunks.
constexpr size_t kMaxPlanPoints = 5'000'000;

// A group of cells with one stable phase, and its trunk if it gets or has one.
struct Group {
  std::string trunk_id;
  std::vector<size_t> cells;  // indices into the request's cells, in file order
  std::optional<TrunkSpec> trunk;
  const StoredPlanCell* stored_trunk = nullptr;
  bool changed = false;  // the trunk is new or extended: store its spec
};

class Planner {
 public:
  // The file's cells move into the plan (a study holds up to 100,000 of them: they are never
  // copied); what the planner reads of them (id, axes, config, budget) it never changes.
  explicit Planner(TrunkPlanRequest request) : request_(std::move(request)) {}

  absl::StatusOr<TrunkPlan> Plan() {
    plan_.cells = std::move(request_.cells);
    for (const StoredPlanCell& s : request_.stored) stored_[s.id] = &s;
    for (const CellSpec& c : cells_) plan_.tokens_without_sharing += c.tokens_budget;
    if (absl::Status s = ReadConfigs(); !s.ok()) return s;
    if (absl::Status s = GroupCells(); !s.ok()) return s;
    Diagnose();
    for (Group& g : groups_) PlanGroup(&g);
    if (request_.share_trunk == true && !plan_.notes.empty()) {
      return absl::InvalidArgumentError(request_.share_trunk_where +
                                        ": train.share_trunk: true, but " + plan_.notes.front());
    }
    Assemble();
    return std::move(plan_);
  }

 private:
  // WSD cells in full; of the others (most studies' every cell) only the schedule and budget
  // the plan looks at, so that planning a cosine study costs one JSON parse a cell.
  absl::Status ReadConfigs() {
    configs_.resize(cells_.size());
    for (size_t i = 0; i < cells_.size(); ++i) {
      const nlohmann::json j =
          nlohmann::json::parse(cells_[i].config_json, nullptr, /*allow_exceptions=*/false);
      const nlohmann::json* schedule = j.is_object() && j.contains("train") &&
                                               j["train"].is_object() &&
                                               j["train"].contains("schedule")
                                           ? &j["train"]["schedule"]
                                           : nullptr;
      CellConfig& config = configs_[i];
      if (schedule != nullptr && schedule->is_string() && *schedule != "wsd") {
        config.train.schedule = schedule->get<std::string>();
        config.train.tokens = cells_[i].tokens_budget;
        continue;
      }
      if (j.is_discarded() || model::ParseCellConfig(j, &config)) {
        return absl::InternalError("cell " + cells_[i].id + ": its config does not read");
      }
    }
    return absl::OkStatus();
  }

  absl::Status GroupCells() {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < configs_.size(); ++i) {
      if (configs_[i].train.schedule != "wsd") continue;
      const std::string id = model::TrunkIdOf(configs_[i]);
      auto [it, added] = index.emplace(id, groups_.size());
      if (added) groups_.push_back(Group{id, {}, std::nullopt, nullptr, false});
      groups_[it->second].cells.push_back(i);
    }
    for (Group& g : groups_) {
      auto it = stored_.find(g.trunk_id);
      if (it == stored_.end() || it->second->role != CellRole::kTrunk) continue;
      const nlohmann::json j =
          nlohmann::json::parse(it->second->config_json, nullptr, /*allow_exceptions=*/false);
      TrunkSpec spec;
      if (j.is_discarded() || model::ParseTrunkSpec(j, &spec)) {
        return absl::InternalError("stored trunk " + g.trunk_id + ": its spec does not read");
      }
      g.trunk = std::move(spec);
      g.stored_trunk = it->second;
    }
    return absl::OkStatus();
  }

  // Notes on budgets of one grid point that cannot share, and on schedules that never do.
  void Diagnose() {
    if (request_.share_trunk == false) return;
    std::map<std::string, std::vector<size_t>> points;  // PointKey -> cells
    for (size_t i = 0; i < configs_.size(); ++i) {
      points[PointKey(cells_[i].axes)].push_back(i);
    }
    std::map<std::string, std::pair<std::string, int>> differences;  // field -> (example, points)
    int cosine_points = 0;
    for (const auto& [key, cells] : points) {
      std::set<int64_t> budgets;
      for (size_t i : cells) budgets.insert(configs_[i].train.tokens);
      if (budgets.size() < 2) continue;
      const CellConfig& first = configs_[cells.front()];
      if (first.train.schedule != "wsd") {
        ++cosine_points;
        continue;
      }
      for (size_t i : cells) {
        const std::string diff = model::StablePhaseDifference(first, configs_[i]);
        if (diff.empty()) continue;
        const std::string field = diff.substr(0, diff.find(':'));
        auto [it, added] = differences.emplace(field, std::make_pair(diff, 0));
        ++it->second.second;
        break;
      }
    }
    for (const auto& [field, example] : differences) {
      std::string note = "the budgets of " + std::to_string(example.second) + " grid point" +
                         (example.second == 1 ? "" : "s") + " cannot share a trunk: they differ " +
                         "in " + example.first;
      if (field == "train.warmup_tokens") {
        note +=
            " (an unset warmup is 5% of each budget); set train.warmup_tokens to one token "
            "count for every budget";
      } else {
        note += "; give every budget of a point the same " + field;
      }
      Note(note);
    }
    if (cosine_points > 0) {
      Note("the budgets of " + std::to_string(cosine_points) + " grid point" +
           (cosine_points == 1 ? "" : "s") +
           " train from scratch: the cosine schedule's curve depends on the budget; "
           "train.schedule: wsd (with train.warmup_tokens set) shares one trunk among them");
    }
  }

  void Note(const std::string& note) {
    if (std::find(plan_.notes.begin(), plan_.notes.end(), note) == plan_.notes.end()) {
      plan_.notes.push_back(note);
    }
  }

  void PlanGroup(Group* g) {
    std::vector<size_t> fresh;  // cells not stored yet, that decay after their first step
    for (size_t i : g->cells) {
      if (stored_.count(cells_[i].id)) continue;
      if (model::BranchPoint(configs_[i]) <= 0) {
        if (g->cells.size() > 1) {
          Note("budget " + Tokens(configs_[i].train.tokens) + " decays from its first step " +
               "(train.decay_fraction " + nlohmann::json(configs_[i].train.decay_fraction).dump() +
               "), so it has no stable phase to share: it trains on its own");
        }
        continue;
      }
      fresh.push_back(i);
    }
    if (fresh.empty() || request_.share_trunk == false) return;
    if (!g->trunk && fresh.size() < 2) return;  // one budget: nothing to share
    if (!request_.shared_checkpoints) {
      Note(
          "onsetd keeps no checkpoints where every worker sees them (--checkpoint-root), so a "
          "branch could not find its trunk's checkpoint: every budget trains on its own");
      return;
    }
    if (!g->trunk) {
      StartTrunk(g, fresh);
    } else {
      for (size_t i : fresh) Join(g, i);
    }
  }

  // The eval step ends of cell `i` up to its branch point `bp`, within what one trunk and the
  // whole plan may hold (so that a study of tiny eval spacings cannot stall its submission);
  // nullopt, with a note, beyond that.
  std::optional<std::vector<int64_t>> EndsOf(size_t i, int64_t bp, size_t trunk_points) {
    const size_t limit =
        std::min(model::kMaxTrunkPoints - std::min(model::kMaxTrunkPoints, trunk_points),
                 kMaxPlanPoints - std::min(kMaxPlanPoints, plan_points_));
    std::optional<std::vector<int64_t>> ends = model::EvalStepEnds(configs_[i], bp, limit);
    if (!ends) {
      Note("budget " + Tokens(configs_[i].train.tokens) + " evaluates at too many points " +
           "before its decay for a trunk to hold them (at most " +
           std::to_string(model::kMaxTrunkPoints) + " a trunk, " + std::to_string(kMaxPlanPoints) +
           " a study): it trains on its own");
      return std::nullopt;
    }
    plan_points_ += ends->size();
    return ends;
  }

  void StartTrunk(Group* g, const std::vector<size_t>& fresh) {
    TrunkSpec spec;
    std::optional<size_t> largest;
    for (size_t i : fresh) {
      const int64_t bp = model::BranchPoint(configs_[i]);
      const std::optional<std::vector<int64_t>> ends = EndsOf(i, bp, spec.eval_at.size());
      if (!ends) continue;
      InsertSorted(&spec.eval_at, *ends);
      InsertSorted(&spec.branch_points, {bp});
      if (!largest || configs_[i].train.tokens > configs_[*largest].train.tokens) largest = i;
      MakeBranch(g, i, bp);
    }
    if (!largest) return;
    spec.cell = configs_[*largest];
    spec.until = spec.branch_points.back();
    g->trunk = std::move(spec);
    g->changed = true;
    largest_[g->trunk_id] = *largest;
  }

  // A new budget of a group whose trunk is stored.
  void Join(Group* g, size_t i) {
    TrunkSpec& spec = *g->trunk;
    const int64_t stored_until = g->stored_trunk->tokens_budget;
    const int64_t bp = model::BranchPoint(configs_[i]);
    const std::string budget = "budget " + Tokens(configs_[i].train.tokens);
    if (EndedUnsucceeded(g->stored_trunk->state)) {
      Note(budget + " trains on its own: the trunk " + g->trunk_id + " it would branch from " +
           CellStateName(g->stored_trunk->state) + " (onset rerun queues it again)");
      return;
    }
    const bool planned_point =
        std::binary_search(spec.branch_points.begin(), spec.branch_points.end(), bp);
    if (bp < stored_until && !planned_point) {
      Note(budget + " trains on its own: its branch point, " + Tokens(bp) + " tokens, lies " +
           "inside the stored trunk " + g->trunk_id + " (to " + Tokens(stored_until) +
           " tokens), which keeps no checkpoint there");
      return;
    }
    if (!planned_point && spec.branch_points.size() >= model::kMaxTrunkPoints) {
      Note(budget + " trains on its own: the trunk " + g->trunk_id + " already has " +
           std::to_string(model::kMaxTrunkPoints) + " branch points, as many as a trunk holds");
      return;
    }
    const std::optional<std::vector<int64_t>> ends = EndsOf(i, bp, spec.eval_at.size());
    if (!ends) return;
    std::vector<int64_t> before, after;
    for (int64_t t : *ends) (t <= stored_until ? before : after).push_back(t);
    // Points added since the trunk was stored all lie beyond its stored end.
    if (!Covers(spec.eval_at, before)) {
      Note(budget + " trains on its own: it evaluates at points within the stored trunk " +
           g->trunk_id + " that the trunk does not evaluate at; set eval.every_tokens " +
           "(the same for every budget) to share eval points");
      return;
    }
    InsertSorted(&spec.eval_at, after);
    InsertSorted(&spec.branch_points, {bp});
    if (bp > spec.until) {
      spec.until = bp;
      g->changed = true;
    }
    if (configs_[i].train.tokens > spec.cell.train.tokens) {
      spec.cell = configs_[i];
      largest_[g->trunk_id] = i;
    }
    MakeBranch(g, i, bp);
  }

  void MakeBranch(const Group* g, size_t i, int64_t bp) {
    CellSpec& cell = plan_.cells[i];
    cell.role = CellRole::kBranch;
    cell.trunk_id = g->trunk_id;
    cell.branch_tokens = bp;
  }

  // The trunk's row: its largest branch's axes and model, with tokens = where it ends.
  CellSpec TrunkRow(const Group& g) const {
    auto it = largest_.find(g.trunk_id);
    const CellSpec& like = it != largest_.end() ? cells_[it->second] : cells_[g.cells.front()];
    CellSpec row;
    row.id = g.trunk_id;
    row.axes = like.axes;
    row.axes["tokens"] = Tokens(g.trunk->until);
    row.config_json = g.trunk->ToJson().dump();
    row.tokens_budget = g.trunk->until;
    row.non_embedding_params = like.non_embedding_params;
    row.train_flops_per_token = like.train_flops_per_token;
    row.role = CellRole::kTrunk;
    return row;
  }

  void Assemble() {
    // Stored cells keep their roles.
    for (CellSpec& cell : plan_.cells) {
      auto it = stored_.find(cell.id);
      if (it == stored_.end()) continue;
      cell.role = it->second->role;
      cell.trunk_id = it->second->trunk_id;
      cell.branch_tokens = it->second->branch_tokens;
    }
    std::map<std::string, const Group*> by_id;
    for (const Group& g : groups_) by_id[g.trunk_id] = &g;
    // The rows of new and extended trunks, made while every cell is still in place.
    std::map<std::string, CellSpec> trunk_rows;
    for (const Group& g : groups_) {
      if (g.trunk && g.changed) trunk_rows.emplace(g.trunk_id, TrunkRow(g));
    }
    std::vector<CellSpec> out;
    out.reserve(cells_.size() + trunk_rows.size());
    std::set<std::string> placed;
    for (CellSpec& cell : cells_) {
      if (cell.role == CellRole::kBranch && placed.insert(cell.trunk_id).second) {
        auto g = by_id.find(cell.trunk_id);
        int64_t until = 0;
        if (g != by_id.end() && g->second->trunk) {
          until = g->second->trunk->until;
          if (auto row = trunk_rows.find(cell.trunk_id); row != trunk_rows.end()) {
            out.push_back(std::move(row->second));
          }
        } else if (auto s = stored_.find(cell.trunk_id); s != stored_.end()) {
          until = s->second->tokens_budget;
        }
        plan_.tokens_to_train += until;
      }
      plan_.tokens_to_train += cell.role == CellRole::kBranch
                                   ? std::max<int64_t>(0, cell.tokens_budget - cell.branch_tokens)
                                   : cell.tokens_budget;
      out.push_back(std::move(cell));
    }
    plan_.cells = std::move(out);
  }

  TrunkPlanRequest request_;
  TrunkPlan plan_;
  std::vector<CellSpec>& cells_ = plan_.cells;  // the file's cells, until Assemble
  std::map<std::string, const StoredPlanCell*> stored_;
  std::vector<CellConfig> configs_;
  std::vector<Group> groups_;
  std::map<std::string, size_t> largest_;  // trunk id -> the cell whose config it trains
  size_t plan_points_ = 0;                 // eval step ends computed so far, all trunks
};

}  // namespace

std::string PlanInputDigest(const std::vector<StoredPlanCell>& stored) {
  std::vector<std::string> rows;
  rows.reserve(stored.size());
  for (const StoredPlanCell& c : stored) {
    nlohmann::json row = {c.id, std::string(wire::RoleName(c.role)), c.trunk_id, c.branch_tokens};
    if (c.role == CellRole::kTrunk) {
      row.push_back(CellStateName(c.state));
      row.push_back(c.tokens_budget);
      row.push_back(c.config_json);
    }
    rows.push_back(row.dump());
  }
  std::sort(rows.begin(), rows.end());
  std::string all;
  for (const std::string& row : rows) all += row + "\n";
  return base::Sha256Hex(all);
}

absl::StatusOr<TrunkPlan> PlanTrunks(TrunkPlanRequest request) {
  return Planner(std::move(request)).Plan();
}

}  // namespace onset::coordinator
