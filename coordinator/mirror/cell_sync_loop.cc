#include "coordinator/mirror/cell_sync_loop.h"

#include <spdlog/spdlog.h>

#include <vector>

namespace onset::coordinator {

CellSyncLoop::CellSyncLoop(std::string name, CellSink* sink, const common::Clock* clock,
                           const Options& options)
    : name_(std::move(name)),
      sink_(sink),
      options_(options),
      overflow_log_(*clock, options.log_interval),
      failure_log_(*clock, options.log_interval) {}

CellSyncLoop::~CellSyncLoop() { Stop(); }

void CellSyncLoop::Start() {
  common::MutexLock stop_lock(&stop_mu_);
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void CellSyncLoop::Stop() {
  common::MutexLock stop_lock(&stop_mu_);
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CellSyncLoop::PointsStored(const std::string& study, const std::string& cell_id) {
  Mark(study, cell_id);
}

void CellSyncLoop::AttemptEnded(const std::string& study, const std::string& cell_id) {
  Mark(study, cell_id);
}

void CellSyncLoop::Mark(const std::string& study, const std::string& cell_id) {
  common::MutexLock lock(&mu_);
  if (pending_.size() >= options_.max_pending && pending_.count({study, cell_id}) == 0) {
    ++dropped_;
    int64_t left_out = 0;
    if (overflow_log_.Occurred(1, &left_out)) {
      spdlog::warn(
          "{} mirror: {} cells wait already; left out a change of cell {} of study {} "
          "(and {} more since the last line): it shows at the cell's next change",
          name_, pending_.size(), cell_id, study, left_out);
    }
    return;
  }
  pending_.emplace(study, cell_id);
}

void CellSyncLoop::SyncPending() {
  std::set<Cell> cells;
  {
    common::MutexLock lock(&mu_);
    cells.swap(pending_);
  }
  if (cells.empty()) return;
  common::MutexLock sync_lock(&sync_mu_);
  std::vector<Cell> retry;
  absl::Status failure;  // the sink is unreachable: the pass ends
  absl::Status refused;  // the first cell the sink refused
  for (const Cell& cell : cells) {
    // After a failure the pass ends: a sink that is down would fail every cell, each after its
    // own timeout. The cells not tried wait for the next pass.
    if (!failure.ok()) {
      retry.push_back(cell);
      continue;
    }
    absl::Status s = sink_->Sync(cell.first, cell.second);
    if (s.ok()) {
      ++synced_;
    } else if (absl::IsNotFound(s)) {
      ++gone_;  // the cell or its study is gone: nothing to mirror, nothing to retry
    } else {
      ++failed_;
      retry.push_back(cell);
      // Only a sink that cannot be reached ends the pass; one cell it refuses (a value the
      // server will not take) is tried again next pass without holding up the others.
      if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
        failure = s;
      } else if (refused.ok()) {
        refused = s;
      }
    }
  }
  if (failure.ok()) failure = refused;
  if (failure.ok()) {
    if (failure_log_.Recovered()) spdlog::info("{} mirror: syncing again", name_);
    return;
  }
  int64_t left_out = 0;
  if (failure_log_.Occurred(1, &left_out)) {
    spdlog::warn(
        "{} mirror: {} cells wait, tried again in {} ms ({} more failed passes since "
        "the last line): {}",
        name_, retry.size(), options_.interval.count(), left_out, failure.ToString());
  }
  common::MutexLock lock(&mu_);
  for (Cell& cell : retry) pending_.insert(std::move(cell));
}

void CellSyncLoop::Loop() {
  while (true) {
    bool stopping = false;
    {
      common::MutexLock lock(&mu_);
      wake_.wait_for(mu_, options_.interval,
                     [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; });
      stopping = stopping_;
    }
    SyncPending();
    if (stopping) return;
  }
}

CellSyncLoop::Stats CellSyncLoop::stats() const {
  Stats s;
  {
    common::MutexLock lock(&mu_);
    s.dropped = dropped_;
    s.pending = static_cast<int64_t>(pending_.size());
  }
  common::MutexLock sync_lock(&sync_mu_);
  s.synced = synced_;
  s.failed = failed_;
  s.gone = gone_;
  return s;
}

}  // namespace onset::coordinator
