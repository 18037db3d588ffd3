#include "db/write_queue.h"

#include <chrono>
#include <utility>

#include "absl/strings/cord.h"

namespace onset::db {

struct WriteQueue::Item {
  std::function<absl::Status(Connection&)> op;
  bool roll_back = false;
  absl::Status status;
  bool done = false;  // guarded by the queue's mu_
  std::condition_variable finished;
};

WriteQueue::WriteQueue(std::unique_ptr<Connection> db, const Options& options)
    : options_(options), db_(std::move(db)), failure_log_(options.failure_log_interval) {
  thread_ = std::thread([this] { Loop(); });
}

WriteQueue::~WriteQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
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
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return absl::UnavailableError("database " + db_->path() + " is closing");
  queue_.push_back(item);
  work_.notify_one();
  item->finished.wait(lock, [&] { return item->done; });
  return item->status;
}

int64_t WriteQueue::commits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commits_;
}

int64_t WriteQueue::WaitForCommit(int64_t seen, int64_t timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  committed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return commits_ > seen || stopping_; });
  return commits_;
}

void WriteQueue::Loop() {
  while (true) {
    std::deque<std::shared_ptr<Item>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
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
  std::lock_guard<std::mutex> lock(mu_);
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
