// The database's single writer: one connection and one thread that run every write.
//
// Callers hand it operations and block until theirs is durable. Whatever has queued up while the
// previous batch committed runs as one transaction (group commit): each operation inside its own
// SAVEPOINT, so an operation that fails rolls back only its own changes, and the batch commits
// once. Under load this turns many small transactions (one heartbeat, one metrics report) into
// few larger ones, and there is never more than one writer to wait for the lock.
//
// A write that fails in SQLite (the database is read-only, the disk full, another program holds
// the lock) returns the status SQLite's error maps to (db/sqlite.h: Internal, or Unavailable
// when it may pass) reading "database write failed: MESSAGE (PATH)", and is logged with the
// statement that failed (db/write_failure_log.h: rate-limited). Other errors of an operation
// (not found, a lease that ended) are returned as they are and not logged here.
//
// Thread-safety: Run may be called from any thread. Operations run on the queue's thread, one at
// a time, and must not call Run themselves.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/latency_histogram.h"
#include "common/mutex.h"
#include "db/sqlite.h"
#include "db/write_failure_log.h"

namespace onset::db {

class WriteQueue {
 public:
  struct Options {
    int max_batch = 512;  // operations per transaction at most
    // At most one log line per this interval about failed writes (WriteFailureLog).
    std::chrono::milliseconds failure_log_interval{10'000};
  };

  // Takes the connection (already migrated) and starts the writer thread.
  WriteQueue(std::unique_ptr<Connection> db, const Options& options);
  explicit WriteQueue(std::unique_ptr<Connection> db) : WriteQueue(std::move(db), Options()) {}
  // Runs what is queued, then stops the thread.
  ~WriteQueue();
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  // Runs `op` inside the writer's transaction and returns once its batch committed: its status,
  // or the commit's error (then nothing of it was written). `op` sees the database as every
  // earlier operation left it.
  absl::Status Run(std::function<absl::Status(Connection&)> op);
  // Like Run, but `op`'s changes are always rolled back: a dry run that shows what a write
  // would do (and reads that must see the very latest state).
  absl::Status RunAndRollBack(std::function<absl::Status(Connection&)> op);

  template <typename T>
  absl::StatusOr<T> Run(std::function<absl::StatusOr<T>(Connection&)> op, bool roll_back = false) {
    std::optional<T> value;
    auto wrapped = [&](Connection& db) -> absl::Status {
      absl::StatusOr<T> result = op(db);
      if (!result.ok()) return result.status();
      value.emplace(*std::move(result));
      return absl::OkStatus();
    };
    absl::Status status = roll_back ? RunAndRollBack(wrapped) : Run(wrapped);
    if (!status.ok()) return status;
    return *std::move(value);
  }

  // Batches committed so far; grows by one with every commit that wrote something.
  int64_t commits() const;
  // Blocks until commits() exceeds `seen` or `timeout_ms` passed; returns commits().
  int64_t WaitForCommit(int64_t seen, int64_t timeout_ms) const;

  const std::string& path() const { return db_->path(); }

  // For monitoring: operations waiting for the next batch, and how long each batch took from
  // BEGIN to the end of its COMMIT (or ROLLBACK), every batch counted.
  struct Stats {
    int64_t queued = 0;
    int64_t commits = 0;
    common::LatencyHistogram::Snapshot batch_seconds;
  };
  Stats stats() const;

 private:
  struct Item;
  absl::Status Submit(std::function<absl::Status(Connection&)> op, bool roll_back);
  void Loop();
  void RunBatch(std::deque<std::shared_ptr<Item>>& batch);
  // `status` as a caller sees it: an SQLite error is logged and becomes "database write failed:
  // ..."; other statuses are returned as they are. A batch's failed COMMIT is reported once.
  absl::Status Reported(const absl::Status& status);

  const Options options_;
  std::unique_ptr<Connection> db_;          // used by the writer thread only
  WriteFailureLog failure_log_;             // used by the writer thread only
  common::LatencyHistogram batch_seconds_;  // thread-safe itself

  mutable common::Mutex mu_;
  std::condition_variable_any work_;               // the queue got an item, or stopping_
  mutable std::condition_variable_any committed_;  // commits_ grew
  std::deque<std::shared_ptr<Item>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t commits_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace onset::db
