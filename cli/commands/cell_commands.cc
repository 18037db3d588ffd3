#include "cli/commands/cell_commands.h"

#include <algorithm>
#include <functional>
#include <memory>

#include <CLI/CLI.hpp>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/commands/study_commands.h"
#include "cli/views/render.h"
#include "cli/views/trunk_view.h"
#include "proto/cell_names.h"

namespace onset::cli {

std::optional<std::map<std::string, std::string>> ParseWhere(const std::string& text,
                                                             std::string* error) {
  std::map<std::string, std::string> where;
  if (text.empty()) return where;
  for (absl::string_view pair : absl::StrSplit(text, ',')) {
    std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty() || kv[1].empty()) {
      *error = "--where: '" + std::string(pair) + "' is not AXIS=VALUE (e.g. arch=swa,window=16)";
      return std::nullopt;
    }
    where[kv[0]] = kv[1];
  }
  return where;
}

namespace {

// The states of a comma-separated list, each one of `allowed`; an error names the first other
// one as `refusal` says ("'done' is not a state"), then lists the allowed ones.
std::optional<std::vector<v1::CellState>> ParseStateList(
    const std::string& text, const std::vector<v1::CellState>& allowed,
    const std::function<std::string(const std::string&)>& refusal, std::string* error) {
  std::vector<v1::CellState> states;
  if (text.empty()) return states;
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    std::optional<v1::CellState> state = wire::StateFromName({name.data(), name.size()});
    if (!state || std::find(allowed.begin(), allowed.end(), *state) == allowed.end()) {
      std::vector<std::string> names;
      for (v1::CellState s : allowed) names.emplace_back(wire::StateName(s));
      *error = "--state: " + refusal(std::string(name)) + " (" + absl::StrJoin(names, ", ") + ")";
      return std::nullopt;
    }
    states.push_back(*state);
  }
  return states;
}

}  // namespace

std::optional<std::vector<v1::CellState>> ParseStates(const std::string& text, std::string* error) {
  return ParseStateList(
      text,
      {v1::CELL_STATE_FAILED, v1::CELL_STATE_DIVERGED, v1::CELL_STATE_CANCELLED,
       v1::CELL_STATE_SUCCEEDED, v1::CELL_STATE_BACKOFF, v1::CELL_STATE_RUNNING},
      [](const std::string& name) {
        return "'" + name + "' is not a state a cell can be rerun from";
      },
      error);
}

std::optional<std::vector<v1::CellState>> ParseAnyStates(const std::string& text,
                                                         std::string* error) {
  return ParseStateList(
      text, {wire::kCellStates.begin(), wire::kCellStates.end()},
      [](const std::string& name) { return "unknown state '" + name + "'"; }, error);
}

void FilterCells(const std::vector<v1::CellState>& states,
                 const std::map<std::string, std::string>& where, v1::GetStudyResponse* study) {
  google::protobuf::RepeatedPtrField<v1::Cell> kept;
  for (v1::Cell& cell : *study->mutable_cells()) {
    bool keep =
        states.empty() || std::find(states.begin(), states.end(), cell.state()) != states.end();
    for (const auto& [axis, value] : where) {
      auto it = cell.axes().find(axis);
      keep = keep && it != cell.axes().end() && it->second == value;
    }
    if (keep) *kept.Add() = std::move(cell);
  }
  study->mutable_cells()->Swap(&kept);
}

int CancelCommand(StudyClient& client, const std::string& study,
                  const std::vector<std::string>& cells, bool json, std::ostream& out,
                  std::ostream& err) {
  absl::StatusOr<v1::CancelCellsResponse> response = client.Cancel(study, cells);
  if (!response.ok()) return ReportError(response.status(), err);
  if (json) {
    out << ToJson(*response);
  } else {
    out << study << ": " << response->cancelled() << " cell"
        << (response->cancelled() == 1 ? "" : "s")
        << " cancelled (running ones stop at their next heartbeat, and show as running until "
           "their trainer has stopped)\n";
  }
  return 0;
}

int RerunCommand(StudyClient& client, const RerunOptions& options, std::ostream& out,
                 std::ostream& err) {
  std::string error;
  std::optional<std::map<std::string, std::string>> where = ParseWhere(options.where, &error);
  std::optional<std::vector<v1::CellState>> states = ParseStates(options.states, &error);
  if (!where || !states) {
    err << error << "\n";
    return 2;
  }
  // What a fresh rerun of named trunks and branches discards, as they were before it.
  std::string discards;
  if (options.fresh && !options.json && !options.cells.empty()) {
    if (absl::StatusOr<v1::GetStudyResponse> before = client.Get(options.study); before.ok()) {
      discards = DescribeFreshRerun(*before, options.cells);
    }
  }
  absl::StatusOr<v1::RerunCellsResponse> response =
      client.Rerun(options.study, *states, *where, options.cells, options.fresh);
  if (!response.ok()) return ReportError(response.status(), err);
  if (options.json) {
    out << ToJson(*response);
  } else {
    out << options.study << ": " << response->queued() << " cell"
        << (response->queued() == 1 ? "" : "s") << " queued again"
        << (options.fresh ? " from scratch" : ", resuming from their checkpoints") << "\n"
        << (response->queued() > 0 ? discards : "");
  }
  return 0;
}

void AddCellCommands(CLI::App& app, CommandTable& table) {
  struct CancelFlags {
    std::string study;
    std::vector<std::string> cells;
    bool json = false;
  };
  auto cancel = std::make_shared<CancelFlags>();
  CLI::App* cancel_app = app.add_subcommand(
      "cancel", "cancel cells that have not ended (every cell of the study when none is named)");
  cancel_app->add_option("STUDY", cancel->study, "study name")->required();
  cancel_app->add_option("CELL", cancel->cells, "cell ids, or unique prefixes of them");
  cancel_app->add_flag("--json", cancel->json, "print JSON");
  table.push_back({cancel_app, Needs::kCoordinator, "cancel",
                   "changes studies, which only a coordinator does",
                   [cancel](const CommandContext& c) {
                     return CancelCommand(*c.client, cancel->study, cancel->cells, cancel->json,
                                          *c.out, *c.err);
                   }});

  auto rerun = std::make_shared<RerunOptions>();
  CLI::App* rerun_app = app.add_subcommand(
      "rerun", "queue ended cells again, resuming from their last checkpoint unless --fresh");
  rerun_app->add_option("STUDY", rerun->study, "study name")->required();
  rerun_app->add_option("CELL", rerun->cells, "only these cells (ids, or unique prefixes of them)");
  rerun_app->add_option("--state", rerun->states,
                        "comma-separated states to rerun (default failed,diverged,cancelled; also "
                        "succeeded, backoff, running: a running cell runs again once its attempt "
                        "has stopped)");
  rerun_app->add_option("--where", rerun->where,
                        "only cells whose axes match, e.g. arch=swa,window=16");
  rerun_app->add_flag("--fresh", rerun->fresh,
                      "start from scratch: discard the cells' checkpoints and metrics");
  rerun_app->add_flag("--json", rerun->json, "print JSON");
  table.push_back({rerun_app, Needs::kCoordinator, "rerun",
                   "changes studies, which only a coordinator does",
                   [rerun](const CommandContext& c) {
                     return RerunCommand(*c.client, *rerun, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
