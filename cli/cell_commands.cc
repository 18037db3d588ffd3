#include "cli/cell_commands.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "cli/trunk_view.h"
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
       v1::CELL_STATE_SUCCEEDED, v1::CELL_STATE_BACKOFF},
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
        << " cancelled (running ones stop at their next heartbeat)\n";
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

}  // namespace onset::cli
