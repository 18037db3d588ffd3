#include "coordinator/notify/event_detector.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/status_macros.h"

namespace onset::coordinator {
namespace {

bool IsFinal(CellState state) {
  return state == CellState::kSucceeded || state == CellState::kFailed ||
         state == CellState::kDiverged || state == CellState::kCancelled;
}

int Count(const StudyInfo& study, CellState state) {
  auto it = study.cells_by_state.find(CellStateName(state));
  return it == study.cells_by_state.end() ? 0 : it->second;
}

// Cells that may still run: queued, running or backing off.
int Live(const StudyInfo& study) {
  return Count(study, CellState::kQueued) + Count(study, CellState::kRunning) +
         Count(study, CellState::kBackoff);
}

bool Ended(const StudyInfo& study) { return study.cells_total > 0 && Live(study) == 0; }

}  // namespace

EventDetector::EventDetector(FeedStore* feed, StudyStore* studies, WorkerStore* workers,
                             const common::Clock* clock, std::chrono::milliseconds live_window,
                             const Options& options)
    : feed_(feed),
      studies_(studies),
      workers_(workers),
      clock_(clock),
      live_window_(live_window),
      options_(options) {}

absl::Status EventDetector::Start() {
  // The log's end first: a study that ends between the two reads is then counted ended and its
  // event suppressed, rather than announced with no event to show for it.
  ONSET_ASSIGN_OR_RETURN(const int64_t seq, feed_->LastEventSeq());
  ONSET_ASSIGN_OR_RETURN(const std::vector<StudyInfo> studies, studies_->ListStudies());
  ONSET_ASSIGN_OR_RETURN(const int64_t live, LiveWorkers());
  last_seq_ = seq;
  ended_.clear();
  for (const StudyInfo& study : studies) {
    if (Ended(study) && ended_.size() < options_.max_known_ended) ended_[study.name] = seq;
  }
  live_workers_ = live;
  armed_ = live > 0;
  started_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Notification>> EventDetector::Poll() {
  if (!started_) return absl::FailedPreconditionError("EventDetector::Poll before Start");
  // Worked on copies, committed at the end: a read that fails consumes nothing.
  std::vector<Notification> out;
  int64_t seq = last_seq_;
  std::map<std::string, int64_t> ended = ended_;
  // Study -> time of its latest final event; checked once the poll has caught up with the log,
  // so that a study's end follows the failures that led to it.
  std::map<std::string, int64_t> finished = finished_;
  bool caught_up = false;
  bool waiting_added = false;  // a cell was queued or began backing off

  const int batch = std::max(1, options_.events_per_read);
  const int most = std::max(1, options_.max_events_per_poll);
  for (int read = 0; read < most;) {
    const int limit = std::min(batch, most - read);
    ONSET_ASSIGN_OR_RETURN(const std::vector<CellEvent> events, feed_->EventsAfter(seq, limit));
    for (const CellEvent& e : events) {
      seq = e.seq;
      if (e.to == CellState::kFailed) out.push_back(CellFailedNotification(e));
      if (IsFinal(e.to)) {
        finished[e.study] = e.at_unix_ms;
      } else {
        // Live again after it was seen ended: its next end is a new one. (An event the reading
        // that saw it ended already reflected is history, not news.)
        auto it = ended.find(e.study);
        if (it != ended.end() && e.seq > it->second) ended.erase(it);
        if (e.to == CellState::kQueued || e.to == CellState::kBackoff) waiting_added = true;
      }
    }
    read += static_cast<int>(events.size());
    if (static_cast<int>(events.size()) < limit) {
      caught_up = true;
      break;
    }
  }

  if (caught_up && !finished.empty()) {
    // The log's end before the studies are read: each read reflects at least the events up to
    // it, which the events of later polls are compared with.
    ONSET_ASSIGN_OR_RETURN(const int64_t observed, feed_->LastEventSeq());
    for (const auto& [name, at] : finished) {
      // The study's counts and one cell, not all of them.
      absl::StatusOr<StudyDetail> detail = studies_->GetStudy(name, CellPage{0, 1});
      if (absl::IsNotFound(detail.status())) continue;
      if (!detail.ok()) return detail.status();
      if (!Ended(detail->study)) {
        ended.erase(name);
        continue;
      }
      if (!ended.emplace(name, observed).second) continue;  // this end was seen already
      out.push_back(StudyEndedNotification(detail->study, at));
    }
    finished.clear();
  }
  while (ended.size() > options_.max_known_ended) ended.erase(ended.begin());

  // Workers: the last live one gone while cells wait, once until one is live again. Checked
  // when the count drops to 0, or when cells start waiting while it is 0.
  ONSET_ASSIGN_OR_RETURN(const int64_t live, LiveWorkers());
  bool armed = armed_ || live > 0;
  if (live == 0 && armed && (live_workers_ > 0 || waiting_added)) {
    ONSET_ASSIGN_OR_RETURN(const std::vector<StudyInfo> studies, studies_->ListStudies());
    int64_t cells = 0, waiting_studies = 0;
    for (const StudyInfo& study : studies) {
      const int waiting = Count(study, CellState::kQueued) + Count(study, CellState::kBackoff);
      cells += waiting;
      waiting_studies += waiting > 0 ? 1 : 0;
    }
    if (cells > 0) {
      out.push_back(WorkersLostNotification(cells, waiting_studies, clock_->WallUnixMs()));
      armed = false;
    }
  }

  last_seq_ = seq;
  ended_ = std::move(ended);
  finished_ = std::move(finished);
  live_workers_ = live;
  armed_ = armed;
  return out;
}

absl::StatusOr<int64_t> EventDetector::LiveWorkers() {
  WorkerQuery query;
  query.live_since_unix_ms = std::max<int64_t>(1, clock_->WallUnixMs() - live_window_.count());
  query.limit = 1;  // the count is what matters
  ONSET_ASSIGN_OR_RETURN(const WorkerPage page, workers_->ListWorkers(query));
  return page.matching;
}

}  // namespace onset::coordinator
