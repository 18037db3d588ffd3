// The store's feeds: a study as of one instant, the events since, and a counter of writes that
// watchers wait on.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/cells/cell_state.h"
#include "coordinator/store/study_store.h"

namespace onset::coordinator {

// A change of a cell's state, from the durable event log (one row per change, in order).
struct CellEvent {
  int64_t seq = 0;    // grows with every event of the coordinator; resume after the last seen
  std::string study;  // the study's name
  std::string cell_id;
  std::map<std::string, std::string> axes;
  std::optional<CellState> from;  // nullopt: the cell was added to the study
  CellState to = CellState::kQueued;
  int64_t at_unix_ms = 0;
  int attempt = 0;        // the cell's latest attempt then (0: none yet)
  std::string worker_id;  // that attempt's worker
  std::string reason;     // that attempt's reason when it ended unsuccessfully
};

// A study as of one instant, with the seq of the last event that instant includes.
struct StudySnapshot {
  StudyDetail detail;
  int64_t last_seq = 0;
};

// Snapshots, events and change waits.
class FeedStore {
 public:
  virtual ~FeedStore() = default;

  // The study and the seq of the newest event it reflects, read in one snapshot, so that the
  // events after last_seq are exactly the changes since. NotFound for an unknown study.
  virtual absl::StatusOr<StudySnapshot> SnapshotStudy(const std::string& name) = 0;
  // The study's events with seq > after_seq, oldest first, at most `limit`. NotFound for an
  // unknown study.
  virtual absl::StatusOr<std::vector<CellEvent>> StudyEvents(const std::string& study,
                                                             int64_t after_seq, int limit) = 0;
  // The events of every study with seq > after_seq, oldest first, at most `limit`: the
  // coordinator-wide tail that notifications follow.
  virtual absl::StatusOr<std::vector<CellEvent>> EventsAfter(int64_t after_seq, int limit) = 0;
  // The seq of the newest event (0 when there is none), so that a follower can start at the
  // end of the log instead of its beginning.
  virtual absl::StatusOr<int64_t> LastEventSeq() = 0;
  // A counter that grows whenever something is written. WaitForChange blocks until it exceeds
  // `seen` or `timeout_ms` passed, and returns it; a watcher polls with it instead of a timer.
  virtual int64_t ChangeVersion() = 0;
  virtual int64_t WaitForChange(int64_t seen, int64_t timeout_ms) = 0;
};

}  // namespace onset::coordinator
