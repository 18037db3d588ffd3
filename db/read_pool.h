// Connections for readers. In WAL mode a reader sees the last committed state and neither
// waits for the writer nor makes it wait (https://www.sqlite.org/wal.html), so listings and
// watches never slow down the write path. Each Run is one read transaction: one consistent
// snapshot, whatever the writer commits meanwhile.
//
// Thread-safety: Run may be called from any thread; a connection serves one call at a time and
// a call waits when every connection is busy.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "db/sqlite.h"

namespace onset::db {

class ReadPool {
 public:
  // Opens `size` query-only connections to `path`, which must be a file already migrated (an
  // in-memory database cannot be shared between connections), with `options` (read_only: the
  // connections open the file read-only, for a database this process must never write).
  static absl::StatusOr<std::unique_ptr<ReadPool>> Open(
      const std::string& path, int size,
      const Connection::Options& options = Connection::Options());

  // How long Run waits for a free connection before it gives up.
  static constexpr std::chrono::seconds kDefaultAcquireTimeout{30};

  // Runs `op` in a read transaction on a free connection. Unavailable, without running `op`,
  // when every connection stays busy for the acquire timeout: a reader held too long slows the
  // calls behind it, never hangs them.
  absl::Status Run(const std::function<absl::Status(Connection&)>& op);

  void set_acquire_timeout(std::chrono::milliseconds timeout) { acquire_timeout_ = timeout; }

  template <typename T>
  absl::StatusOr<T> Run(const std::function<absl::StatusOr<T>(Connection&)>& op) {
    std::optional<T> value;
    absl::Status status = Run([&](Connection& db) -> absl::Status {
      absl::StatusOr<T> result = op(db);
      if (!result.ok()) return result.status();
      value.emplace(*std::move(result));
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    return *std::move(value);
  }

 private:
  explicit ReadPool(std::vector<std::unique_ptr<Connection>> connections);

  common::Mutex mu_;
  std::condition_variable_any freed_;
  std::vector<std::unique_ptr<Connection>> all_;
  std::vector<Connection*> free_ ABSL_GUARDED_BY(mu_);
  std::chrono::milliseconds acquire_timeout_ = kDefaultAcquireTimeout;
};

}  // namespace onset::db
