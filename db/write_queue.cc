#include "db/write_queue.h"

#include <chrono>
#include <utility>

#include "absl/strings/cord.h"

namespace onset::db {

struct WriteQueue::Item {
  std::function<absl::Status(Connection&)> op;
  bool roll_back = false;
  absl::Status status;
  bool done = false;  // guarded by the queue's mu_ (an Item has no mutex of its own to name)
  std::condition_variable_any finished;
};

WriteQueue::WriteQueue(std::unique_ptr<Connection> db, const Options& options)
    : options_(options), db_(std::move(db)), failure_log_(options.failure_log_interval) {
  thread_ = std::thread([this] { Loop(); });
}

WriteQueue::~WriteQueue() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
}

absl::Status WriteQueue::Run(std::function<absl::Status(Connection&)> op) {
  return Submit(std::move(op), /*roll_back=*/false);
}

absl::Status WriteQueue::RunAndRollBack(std::function<absl::Status(Connection&)> op) {
  return Submit(std::move(op), /*roll_back=*/true);
}

absl::Status WriteQueue::Submit(std::function<absl::Status(Connection&)> op, bool roll_back) {
  auto item = std::make_shared<Item>();
  item->op = std::move(op);
  item->roll_back = roll_back;
  common::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("database " + db_->path() + " is closing");
  queue_.push_back(item);
  work_.notify_one();
  while (!item->done) item->finished.wait(mu_);
  return item->status;
}

int64_t WriteQueue::commits() const {
  common::MutexLock lock(&mu_);
  return commits_;
}

WriteQueue::Stats WriteQueue::stats() const {
  Stats out;
  {
    common::MutexLock lock(&mu_);
    out.queued = static_cast<int64_t>(queue_.size());
    out.commits = commits_;
  }
  out.batch_seconds = batch_seconds_.Read();
  return out;
}

int64_t WriteQueue::WaitForCommit(int64_t seen, int64_t timeout_ms) const {
  common::MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (commits_ <= seen && !stopping_ &&
         committed_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
  }
  return commits_;
}

void WriteQueue::Loop() {
  while (true) {
    std::deque<std::shared_ptr<Item>> batch;
    {
      common::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) work_.wait(mu_);
      if (queue_.empty()) return;  // stopping, and everything queued has run
      while (!queue_.empty() && static_cast<int>(batch.size()) < options_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    RunBatch(batch);
  }
}

absl::Status WriteQueue::Reported(const absl::Status& status) {
  std::optional<SqliteError> error = SqliteErrorOf(status);
  if (!error) return status;
  // The log gets SQLite's whole message, with the statement; the caller the reason and the file.
  failure_log_.Failed("database write failed: " + std::string(status.message()));
  absl::Status reported(status.code(),
                        "database write failed: " + error->message + " (" + db_->path() + ")");
  status.ForEachPayload(
      [&](auto url, const absl::Cord& payload) { reported.SetPayload(url, payload); });
  return reported;
}

void WriteQueue::RunBatch(std::deque<std::shared_ptr<Item>>& batch) {
  const auto started = std::chrono::steady_clock::now();
  bool wrote = false;
  absl::Status begun = db_->Exec("BEGIN IMMEDIATE");
  if (begun.ok()) {
    for (const std::shared_ptr<Item>& item : batch) {
      if (absl::Status s = db_->Exec("SAVEPOINT op"); !s.ok()) {
        item->status = Reported(s);
        continue;
      }
      item->status = Reported(item->op(*db_));
      if (!item->status.ok() || item->roll_back) {
        // Undo this operation's changes only; the others in the batch stand.
        if (absl::Status s = db_->Exec("ROLLBACK TO op"); !s.ok() && item->status.ok()) {
          item->status = Reported(s);
        }
      } else {
        wrote = true;
      }
      if (absl::Status s = db_->Exec("RELEASE op"); !s.ok() && item->status.ok()) {
        item->status = Reported(s);
      }
    }
    absl::Status committed = db_->Exec("COMMIT");
    if (!committed.ok()) {
      (void)db_->Exec("ROLLBACK");
      wrote = false;
      // Nothing of the batch was written: an operation that thought it succeeded did not.
      committed = Reported(committed);
      for (const std::shared_ptr<Item>& item : batch) {
        if (item->status.ok()) item->status = committed;
      }
    } else if (wrote) {
      failure_log_.Succeeded();
    }
  } else {
    begun = Reported(begun);
    for (const std::shared_ptr<Item>& item : batch) item->status = begun;
  }
  batch_seconds_.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  common::MutexLock lock(&mu_);
  if (wrote) {
    ++commits_;
    committed_.notify_all();
  }
  for (const std::shared_ptr<Item>& item : batch) {
    item->done = true;
    item->finished.notify_all();
  }
}

}  // namespace onset::db
