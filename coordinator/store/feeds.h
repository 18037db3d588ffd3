// Following a study live: the logic behind WatchStudy (`onset watch`) and the long poll of
// ReadLogs (`onset logs -f`). No gRPC here: the service hands in a sink and a stop test.
//
// Both wake on the store's change counter (FeedStore::WaitForChange) rather than a fixed timer, so
// a change reaches the watcher within milliseconds, and poll at most every `poll_ms` otherwise to
// notice that the client went away.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/store/feed_store.h"
#include "coordinator/store/log_store.h"
#include "coordinator/store/study_store.h"

namespace onset::coordinator {

// One message to a watcher.
struct WatchUpdate {
  // The first message(s) of a watch from seq 0: at most FeedOptions::snapshot_cells cells each;
  // snapshot_more while the next message continues the snapshot.
  std::optional<StudyDetail> snapshot;
  bool snapshot_more = false;
  int64_t last_seq = 0;            // resume after this
  std::vector<CellEvent> events;   // in seq order
  std::vector<CellInfo> progress;  // cells whose tokens, throughput or loss changed
  StudyInfo study;                 // counts and alert as of this message
};

struct FeedOptions {
  int64_t poll_ms = 500;          // longest wait between two looks at the store
  int64_t min_interval_ms = 200;  // shortest gap between two messages (progress is a gauge)
  int max_events = 1000;          // events per message
  int snapshot_cells = 2000;      // cells per snapshot message
  int max_progress = 5000;        // progress entries per message
};

// Every message stays far below gRPC's message size limit whatever the study's size: the
// snapshot, the events and the progress come in bounded pieces. Progress is checked on the
// running cells and those the new events name, never by reading the whole study.
//
// Sends `study`'s changes after `after_seq` (0: first a snapshot) to `send` until `send`
// returns false or `stopped()` returns true; returns OK then. NotFound for an unknown study,
// OutOfRange when after_seq is ahead of the event log (a watcher of another coordinator's
// database), other store errors as they come.
// `feed` gives the snapshot, the events and the change counter, `studies` the cells and summary.
absl::Status WatchStudy(FeedStore& feed, StudyStore& studies, const std::string& study,
                        int64_t after_seq, const std::function<bool(const WatchUpdate&)>& send,
                        const std::function<bool()>& stopped,
                        const FeedOptions& options = FeedOptions());

// LogStore::ReadLogs, but when the chunk has no lines and more may come (its attempt has not
// ended, the cell has no attempt yet, or the attempt is the cell's latest and the cell may run
// again), reads again as the store changes, for up to `wait_ms` or until `stopped()`.
absl::StatusOr<LogChunk> ReadLogsWaiting(LogStore& logs, FeedStore& feed, const LogQuery& query,
                                         int64_t wait_ms, const std::function<bool()>& stopped,
                                         const FeedOptions& options = FeedOptions());

}  // namespace onset::coordinator
