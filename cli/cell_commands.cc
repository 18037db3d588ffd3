#include "cli/cell_commands.h"

#include "absl/strings/str_split.h"
#include "cli/commands.h"

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

std::optional<std::vector<v1::CellState>> ParseStates(const std::string& text, std::string* error) {
  static const std::map<std::string, v1::CellState> kRerunnable = {
      {"failed", v1::CELL_STATE_FAILED},
      {"diverged", v1::CELL_STATE_DIVERGED},
      {"cancelled", v1::CELL_STATE_CANCELLED},
      {"succeeded", v1::CELL_STATE_SUCCEEDED},
      {"backoff", v1::CELL_STATE_BACKOFF}};
  std::vector<v1::CellState> states;
  if (text.empty()) return states;
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    auto it = kRerunnable.find(std::string(name));
    if (it == kRerunnable.end()) {
      *error = "--state: '" + std::string(name) +
               "' is not a state a cell can be rerun from (failed, diverged, cancelled, "
               "succeeded, backoff)";
      return std::nullopt;
    }
    states.push_back(it->second);
  }
  return states;
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
  absl::StatusOr<v1::RerunCellsResponse> response =
      client.Rerun(options.study, *states, *where, options.cells, options.fresh);
  if (!response.ok()) return ReportError(response.status(), err);
  if (options.json) {
    out << ToJson(*response);
  } else {
    out << options.study << ": " << response->queued() << " cell"
        << (response->queued() == 1 ? "" : "s") << " queued again"
        << (options.fresh ? " from scratch" : ", resuming from their checkpoints") << "\n";
  }
  return 0;
}

}  // namespace onset::cli
