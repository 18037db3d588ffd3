// Server streams bounded by their readers. A client that stops reading (a suspended process, a
// hung mount, an answer nobody reads) blocks the stream's next Write once gRPC's flow-control
// windows are full, and the call then holds whatever it holds (a backup's read transaction, a
// submission's place among kConcurrentSubmissions and its cells in memory, a watch's thread) for
// as long as the client waits. A WriteWatchdog ends such a call: a write that has not completed
// within its limit has its call cancelled (ServerContext::TryCancel), which makes the blocked
// Write return false, so the handler returns and lets go.
//
// Thread-safe. One thread of its own sleeps until the earliest deadline of the writes in flight.
#pragma once

#include <grpcpp/server_context.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <thread>

#include "common/mutex.h"

namespace onset::coordinator {

// How long a streamed reply may wait for its reader before its call is cancelled.
inline constexpr std::chrono::seconds kStalledReaderLimit{30};

class WriteWatchdog {
 public:
  WriteWatchdog();
  ~WriteWatchdog();  // joins the thread; no write may be in flight
  WriteWatchdog(const WriteWatchdog&) = delete;
  WriteWatchdog& operator=(const WriteWatchdog&) = delete;

  // writer->Write(message), with `context` cancelled if it has not returned within `limit`.
  // Returns what Write returned (false once cancelled, or when the client went away).
  template <typename Writer, typename Message>
  bool Write(grpc::ServerContext* context, Writer* writer, const Message& message,
             std::chrono::milliseconds limit = kStalledReaderLimit) {
    const uint64_t id = Watch(context, limit);
    const bool written = writer->Write(message);
    Unwatch(id);
    return written;
  }

  // Calls cancelled because a write waited past its limit, since this watchdog started.
  int64_t cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::chrono::steady_clock::time_point deadline;
    grpc::ServerContext* context;
  };
  uint64_t Watch(grpc::ServerContext* context, std::chrono::milliseconds limit)
      ABSL_LOCKS_EXCLUDED(mu_);
  // After it returns, the watchdog no longer touches the call's context.
  void Unwatch(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  common::Mutex mu_;
  std::condition_variable_any changed_;
  std::map<uint64_t, Entry> watched_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> cancelled_{0};
  std::thread thread_;
};

}  // namespace onset::coordinator
