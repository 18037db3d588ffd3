#include "coordinator/store/feeds.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>
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

absl::Status WatchStudy(FeedStore& feed, StudyStore& studies, const std::string& study,
                        int64_t after_seq, const std::function<bool(const WatchUpdate&)>& send,
                        const std::function<bool()>& stopped, const FeedOptions& options) {
  const size_t snapshot_cells = static_cast<size_t>(std::max(1, options.snapshot_cells));
  const size_t max_progress = static_cast<size_t>(std::max(1, options.max_progress));
  std::map<std::string, Progress> told;
  int64_t seq = after_seq;
  int64_t version = feed.ChangeVersion();
  {
    ONSET_ASSIGN_OR_RETURN(StudySnapshot snapshot, feed.SnapshotStudy(study));
    if (after_seq > snapshot.last_seq) {
      return absl::OutOfRangeError("watch of study " + study + " from event " +
                                   std::to_string(after_seq) + ", but the newest is " +
                                   std::to_string(snapshot.last_seq) +
                                   "; start again from 0 (was the database replaced?)");
    }
    if (after_seq == 0) {
      std::vector<CellInfo>& cells = snapshot.detail.cells;
      for (const CellInfo& cell : cells) told[cell.id] = ProgressOf(cell);
      // The snapshot in pieces: every piece carries the study, the last one ends it.
      size_t from = 0;
      do {
        const size_t to = std::min(cells.size(), from + snapshot_cells);
        WatchUpdate piece;
        piece.study = snapshot.detail.study;
        piece.last_seq = snapshot.last_seq;
        piece.snapshot.emplace();
        piece.snapshot->study = snapshot.detail.study;
        piece.snapshot->cells.assign(std::make_move_iterator(cells.begin() + from),
                                     std::make_move_iterator(cells.begin() + to));
        piece.snapshot_more = to < cells.size();
        if (!send(piece)) return absl::OkStatus();
        from = to;
      } while (from < cells.size());
      seq = snapshot.last_seq;
    }
    // Resuming: the events after after_seq come below, with the current progress of the
    // running cells and of those the events name (progress is a gauge: the latest value is all
    // a watcher needs).
  }
  // A page past every cell: the study's counts and alert without its cells.
  const CellPage no_cells{std::numeric_limits<int64_t>::max(), 0};
  while (!stopped()) {
    ONSET_ASSIGN_OR_RETURN(std::vector<CellEvent> events,
                           feed.StudyEvents(study, seq, options.max_events));
    CellFilter changed{.running = true, .ids = {}};
    for (const CellEvent& e : events) changed.ids.push_back(e.cell_id);
    ONSET_ASSIGN_OR_RETURN(std::vector<CellInfo> cells, studies.FindCells(study, changed));
    ONSET_ASSIGN_OR_RETURN(StudyDetail detail, studies.GetStudy(study, no_cells));
    std::vector<CellInfo> progress;
    for (CellInfo& cell : cells) {
      auto it = told.find(cell.id);
      const Progress now = ProgressOf(cell);
      if (it != told.end() && it->second == now) continue;
      told[cell.id] = now;
      progress.push_back(std::move(cell));
    }
    if (!events.empty() || !progress.empty()) {
      if (!events.empty()) seq = events.back().seq;
      const bool more = static_cast<int>(events.size()) == options.max_events;
      // The events in one message, the progress in pieces of at most max_progress.
      size_t from = 0;
      do {
        const size_t to = std::min(progress.size(), from + max_progress);
        WatchUpdate update;
        if (from == 0) update.events = std::move(events);
        update.progress.assign(std::make_move_iterator(progress.begin() + from),
                               std::make_move_iterator(progress.begin() + to));
        update.last_seq = seq;
        update.study = detail.study;
        if (!send(update)) return absl::OkStatus();
        from = to;
      } while (from < progress.size());
      if (more) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(options.min_interval_ms));
    }
    version = feed.WaitForChange(version, options.poll_ms);
  }
  return absl::OkStatus();
}

absl::StatusOr<LogChunk> ReadLogsWaiting(LogStore& logs, FeedStore& feed, const LogQuery& query,
                                         int64_t wait_ms, const std::function<bool()>& stopped,
                                         const FeedOptions& options) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  int64_t version = feed.ChangeVersion();
  LogQuery next = query;
  while (true) {
    const auto read_at = std::chrono::steady_clock::now();
    ONSET_ASSIGN_OR_RETURN(LogChunk chunk, logs.ReadLogs(next));
    // Later looks name the cell by its full id in its study (one indexed lookup) and its
    // attempt, as found now.
    next.study = chunk.study;
    next.cell = chunk.cell_id;
    // An ended attempt writes no more lines; but while it is the cell's latest and the cell
    // may run again, the caller waits for the next attempt (latest_attempt then grows).
    const bool cell_may_run = chunk.cell_state == CellState::kQueued ||
                              chunk.cell_state == CellState::kBackoff ||
                              chunk.cell_state == CellState::kRunning;
    const bool may_grow = !chunk.ended || (chunk.attempt == chunk.latest_attempt && cell_may_run);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!chunk.lines.empty() || !may_grow || left.count() <= 0 || stopped()) return chunk;
    version = feed.WaitForChange(version, std::min<int64_t>(left.count(), options.poll_ms));
    // Every commit wakes a waiter (heartbeats commit several times a second): a waiting reader
    // looks at most every min_interval_ms, whatever the write rate.
    const auto next_read = read_at + std::chrono::milliseconds(options.min_interval_ms);
    const auto now = std::chrono::steady_clock::now();
    if (now < next_read) std::this_thread::sleep_for(std::min(next_read, deadline) - now);
  }
}

}  // namespace onset::coordinator
