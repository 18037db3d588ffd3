// What onsetd tells a webhook: one event of a kind (a study ended, a cell failed for good, the
// last live worker was lost while cells wait) with a one-line `text` for people and the same
// facts as JSON fields for programs. The text is what a Slack-style incoming webhook shows, so
// it reads on its own: "onset: study "demo" ended: 12 succeeded, 1 failed, 0 cancelled (13
// cells)".
//
// Pure: builders of values; no I/O.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "coordinator/store/feed_store.h"
#include "coordinator/store/study_store.h"

namespace onset::coordinator {

// Notification::kind values.
inline constexpr char kStudyEnded[] = "study_ended";
inline constexpr char kCellFailed[] = "cell_failed";
inline constexpr char kWorkersLost[] = "workers_lost";

struct Notification {
  std::string kind;                                  // kStudyEnded, kCellFailed or kWorkersLost
  std::string text;                                  // one line, for people
  nlohmann::json fields = nlohmann::json::object();  // the kind's facts, for programs
  int64_t at_unix_ms = 0;                            // when it happened
};

// The body POSTed: {"kind": ..., "text": ..., "at_unix_ms": ..., <fields>...}, one line. The
// three named members win over fields of the same names; text that is not UTF-8 is repaired
// (U+FFFD) rather than failing the notification.
std::string NotificationJson(const Notification& notification);

// `study` has no cell left to run (none queued, running or backing off): its counts by state.
// Fields: study, cells (grid points), cells_by_state.
Notification StudyEndedNotification(const StudyInfo& study, int64_t at_unix_ms);
// `event` moved its cell to kFailed: failed for good, no retry follows. Fields: study, cell_id,
// axes, attempt, worker_id, reason.
Notification CellFailedNotification(const CellEvent& event);
// No worker is live any more while `cells_waiting` cells (queued or backing off) of
// `studies_waiting` studies wait. Fields: cells_waiting, studies_waiting.
Notification WorkersLostNotification(int64_t cells_waiting, int64_t studies_waiting,
                                     int64_t at_unix_ms);

}  // namespace onset::coordinator
