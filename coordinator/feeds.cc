#include "coordinator/feeds.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <tuple>

#include "common/status_macros.h"

namespace onset::coordinator {
namespace {

// What a watcher has been told of a cell's progress.
using Progress = std::tuple<int64_t, double, std::optional<double>>;

Progress ProgressOf(const CellInfo& cell) {
  return {cell.tokens_done, cell.tokens_per_second, cell.latest_loss};
}

}  // namespace

absl::Status WatchStudy(Store& store, const std::string& study, int64_t after_seq,
                        const std::function<bool(const WatchUpdate&)>& send,
                        const std::function<bool()>& stopped, const FeedOptions& options) {
  std::map<std::string, Progress> told;
  int64_t seq = after_seq;
  int64_t version = store.ChangeVersion();
  {
    ONSET_ASSIGN_OR_RETURN(StudySnapshot snapshot, store.SnapshotStudy(study));
    if (after_seq > snapshot.last_seq) {
      return absl::OutOfRangeError("watch of study " + study + " from event " +
                                   std::to_string(after_seq) + ", but the newest is " +
                                   std::to_string(snapshot.last_seq) +
                                   "; start again from 0 (was the database replaced?)");
    }
    if (after_seq == 0) {
      WatchUpdate first;
      for (const CellInfo& cell : snapshot.detail.cells) told[cell.id] = ProgressOf(cell);
      first.study = snapshot.detail.study;
      first.last_seq = snapshot.last_seq;
      first.snapshot = std::move(snapshot.detail);
      if (!send(first)) return absl::OkStatus();
      seq = first.last_seq;
    }
    // Resuming: the events after after_seq come below, with every cell's current progress
    // (progress is a gauge: the latest value is all a watcher needs).
  }
  while (!stopped()) {
    ONSET_ASSIGN_OR_RETURN(std::vector<CellEvent> events,
                           store.StudyEvents(study, seq, options.max_events));
    ONSET_ASSIGN_OR_RETURN(StudyDetail detail, store.GetStudy(study));
    WatchUpdate update;
    for (const CellInfo& cell : detail.cells) {
      auto it = told.find(cell.id);
      const Progress now = ProgressOf(cell);
      if (it != told.end() && it->second == now) continue;
      told[cell.id] = now;
      update.progress.push_back(cell);
    }
    if (!events.empty() || !update.progress.empty()) {
      if (!events.empty()) seq = events.back().seq;
      const bool more = static_cast<int>(events.size()) == options.max_events;
      update.events = std::move(events);
      update.last_seq = seq;
      update.study = std::move(detail.study);
      if (!send(update)) return absl::OkStatus();
      if (more) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(options.min_interval_ms));
    }
    version = store.WaitForChange(version, options.poll_ms);
  }
  return absl::OkStatus();
}

absl::StatusOr<LogChunk> ReadLogsWaiting(Store& store, const LogQuery& query, int64_t wait_ms,
                                         const std::function<bool()>& stopped,
                                         const FeedOptions& options) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  int64_t version = store.ChangeVersion();
  while (true) {
    ONSET_ASSIGN_OR_RETURN(LogChunk chunk, store.ReadLogs(query));
    // An ended attempt writes no more lines; but while it is the cell's latest and the cell
    // may run again, the caller waits for the next attempt (latest_attempt then grows).
    const bool cell_may_run = chunk.cell_state == CellState::kQueued ||
                              chunk.cell_state == CellState::kBackoff ||
                              chunk.cell_state == CellState::kRunning;
    const bool may_grow = !chunk.ended || (chunk.attempt == chunk.latest_attempt && cell_may_run);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!chunk.lines.empty() || !may_grow || left.count() <= 0 || stopped()) return chunk;
    version = store.WaitForChange(version, std::min<int64_t>(left.count(), options.poll_ms));
  }
}

}  // namespace onset::coordinator
