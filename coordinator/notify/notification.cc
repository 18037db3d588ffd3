#include "coordinator/notify/notification.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/utf8.h"

namespace onset::coordinator {
namespace {

// A failure reason is one line from the worker; a chat line carries its start, the JSON field
// all of it.
constexpr size_t kMaxReasonInText = 300;
// Cell ids are shown as the CLI shows them.
constexpr size_t kShortCellId = 8;

std::string Plural(int64_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

int Count(const std::map<std::string, int>& by_state, CellState state) {
  auto it = by_state.find(CellStateName(state));
  return it == by_state.end() ? 0 : it->second;
}

}  // namespace

std::string NotificationJson(const Notification& notification) {
  nlohmann::json body =
      notification.fields.is_object() ? notification.fields : nlohmann::json::object();
  body["kind"] = notification.kind;
  body["text"] = notification.text;
  body["at_unix_ms"] = notification.at_unix_ms;
  // Reasons come from trainers' output: a byte that is not UTF-8 must not cost the notification.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Notification StudyEndedNotification(const StudyInfo& study, int64_t at_unix_ms) {
  const int diverged = Count(study.cells_by_state, CellState::kDiverged);
  std::string text =
      absl::StrCat("onset: study \"", study.name,
                   "\" ended: ", Count(study.cells_by_state, CellState::kSucceeded), " succeeded, ",
                   Count(study.cells_by_state, CellState::kFailed), " failed, ",
                   diverged > 0 ? absl::StrCat(diverged, " diverged, ") : std::string(),
                   Count(study.cells_by_state, CellState::kCancelled), " cancelled (",
                   Plural(study.cells_total, "cell", "cells"), ")");
  Notification n;
  n.kind = kStudyEnded;
  n.text = std::move(text);
  n.fields = {{"study", study.name},
              {"cells", study.cells_total},
              {"cells_by_state", study.cells_by_state}};
  n.at_unix_ms = at_unix_ms;
  return n;
}

Notification CellFailedNotification(const CellEvent& event) {
  std::vector<std::string> axes;
  for (const auto& [axis, value] : event.axes) axes.push_back(absl::StrCat(axis, "=", value));
  std::string reason(common::TruncateUtf8(event.reason, kMaxReasonInText));
  if (reason.size() < event.reason.size()) reason += "…";
  for (char& c : reason) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';  // the text stays one line
  }
  Notification n;
  n.kind = kCellFailed;
  n.text = absl::StrCat("onset: cell ", event.cell_id.substr(0, kShortCellId), " of study \"",
                        event.study, "\"", axes.empty() ? "" : " (", absl::StrJoin(axes, " "),
                        axes.empty() ? "" : ")", " failed for good after ",
                        Plural(event.attempt, "attempt", "attempts"),
                        event.reason.empty() ? "" : ": ", reason);
  n.fields = {{"study", event.study},     {"cell_id", event.cell_id},     {"axes", event.axes},
              {"attempt", event.attempt}, {"worker_id", event.worker_id}, {"reason", event.reason}};
  n.at_unix_ms = event.at_unix_ms;
  return n;
}

Notification WorkersLostNotification(int64_t cells_waiting, int64_t studies_waiting,
                                     int64_t at_unix_ms) {
  Notification n;
  n.kind = kWorkersLost;
  n.text = absl::StrCat("onset: no live worker left; ", cells_waiting,
                        cells_waiting == 1 ? " cell waits in " : " cells wait in ",
                        Plural(studies_waiting, "study", "studies"));
  n.fields = {{"cells_waiting", cells_waiting}, {"studies_waiting", studies_waiting}};
  n.at_unix_ms = at_unix_ms;
  return n;
}

}  // namespace onset::coordinator
