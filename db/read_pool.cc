#include "db/read_pool.h"

#include <string>
#include <utility>

namespace onset::db {

absl::StatusOr<std::unique_ptr<ReadPool>> ReadPool::Open(const std::string& path, int size,
                                                         const Connection::Options& options) {
  std::vector<std::unique_ptr<Connection>> connections;
  for (int i = 0; i < size; ++i) {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path, options);
    if (!db.ok()) return db.status();
    // A reader that tried to write would take the lock from the writer: refuse it outright.
    if (absl::Status s = (*db)->Exec("PRAGMA query_only=ON"); !s.ok()) return s;
    connections.push_back(*std::move(db));
  }
  return std::unique_ptr<ReadPool>(new ReadPool(std::move(connections)));
}

ReadPool::ReadPool(std::vector<std::unique_ptr<Connection>> connections)
    : all_(std::move(connections)) {
  for (const auto& db : all_) free_.push_back(db.get());
}

absl::Status ReadPool::Run(const std::function<absl::Status(Connection&)>& op) {
  Connection* db = nullptr;
  {
    common::MutexLock lock(&mu_);
    const auto deadline = std::chrono::steady_clock::now() + acquire_timeout_;
    while (free_.empty() && freed_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
    }
    if (free_.empty()) {
      return absl::UnavailableError("every database reader (" + std::to_string(all_.size()) +
                                    ") stayed busy for " +
                                    std::to_string(acquire_timeout_.count()) +
                                    " ms: the coordinator is overloaded, try again");
    }
    db = free_.back();
    free_.pop_back();
  }
  absl::Status status = db->Exec("BEGIN");
  if (status.ok()) {
    status = op(*db);
    // A read transaction has nothing to keep; ending it lets WAL checkpoints move on.
    (void)db->Exec("COMMIT");
  }
  {
    common::MutexLock lock(&mu_);
    free_.push_back(db);
  }
  freed_.notify_one();
  return status;
}

}  // namespace onset::db
