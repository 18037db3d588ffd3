// What is worth a notification, found in the store: the coordinator-wide event log (FeedStore::
// EventsAfter) says which cells failed for good and which studies saw a cell end; the studies'
// counts say whether such a study has ended; the worker listing says whether any worker is
// still live. Pure over the store interfaces: no threads, no network; the caller polls and
// hands the result to a Notifier.
//
//   cell_failed   an event moved a cell to failed: failed for good (a failure that will be
//                 retried moves it to backoff instead).
//   study_ended   a study that saw a cell reach a final state (succeeded, failed, diverged,
//                 cancelled) has no cell queued, running or backing off. Once per end: a study
//                 is announced again only after a cell of it was queued again (rerun, new cells)
//                 and it ended anew.
//   workers_lost  no worker is live (seen within live_window, not exited) while cells are
//                 queued or backing off, after one was live: once, and again only after a worker
//                 was live again. Liveness passes with time, not with a write: poll also on a
//                 timer (every few seconds), not only when the store changes.
//
// Start() begins at the end of the log: what happened before (or while onsetd was down) is not
// announced, and a restart does not announce history again.
//
// Thread-safety: none; one caller polls.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "coordinator/notify/notification.h"
#include "coordinator/store/feed_store.h"
#include "coordinator/store/study_store.h"
#include "coordinator/store/worker_store.h"

namespace onset::coordinator {

class EventDetector {
 public:
  struct Options {
    int events_per_read = 1000;
    // Events one Poll reads at most; the rest wait for the next, so that a burst (a large
    // study cancelled) never makes one poll long.
    int max_events_per_poll = 10'000;
    // Ended studies remembered, at most (beyond, the first by name is forgotten: at worst
    // announced twice).
    size_t max_known_ended = 10'000;
  };

  // The stores and `clock` must outlive the detector. `live_window`: how recently a worker must
  // have been seen to be live (the listing's kWorkerLiveWindow).
  EventDetector(FeedStore* feed, StudyStore* studies, WorkerStore* workers,
                const common::Clock* clock, std::chrono::milliseconds live_window,
                const Options& options);
  EventDetector(FeedStore* feed, StudyStore* studies, WorkerStore* workers,
                const common::Clock* clock, std::chrono::milliseconds live_window)
      : EventDetector(feed, studies, workers, clock, live_window, Options()) {}

  // Records where the log ends, which studies have ended and how many workers are live, as
  // the starting point. The store's error when a read fails (Start again).
  absl::Status Start();

  // What happened since the previous Poll (or Start), oldest first. On a store error nothing
  // is consumed: the next Poll reads the same events again. FailedPrecondition before Start().
  absl::StatusOr<std::vector<Notification>> Poll();

  // The seq of the last event read.
  int64_t last_seq() const { return last_seq_; }

 private:
  absl::StatusOr<int64_t> LiveWorkers();

  FeedStore* const feed_;
  StudyStore* const studies_;
  WorkerStore* const workers_;
  const common::Clock* const clock_;
  const std::chrono::milliseconds live_window_;
  const Options options_;

  bool started_ = false;
  int64_t last_seq_ = 0;
  // Studies known to have ended (announced, or so at Start), each with the log's end when it was
  // seen so: only a later event that queues one of its cells makes the next end news.
  std::map<std::string, int64_t> ended_;
  // Studies that saw a final event in polls that did not catch up, to check when one does.
  std::map<std::string, int64_t> finished_;
  int64_t live_workers_ = 0;  // at the previous poll
  bool armed_ = false;        // a worker was live since the last workers_lost
};

}  // namespace onset::coordinator
