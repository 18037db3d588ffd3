#include "coordinator/rpc/write_watchdog.h"

#include <spdlog/spdlog.h>

#include <string>

namespace onset::coordinator {

WriteWatchdog::WriteWatchdog() : thread_([this] { Run(); }) {}

WriteWatchdog::~WriteWatchdog() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

uint64_t WriteWatchdog::Watch(grpc::ServerContext* context, std::chrono::milliseconds limit) {
  uint64_t id;
  {
    common::MutexLock lock(&mu_);
    id = ++next_id_;
    watched_[id] = Entry{std::chrono::steady_clock::now() + limit, context};
  }
  changed_.notify_all();
  return id;
}

void WriteWatchdog::Unwatch(uint64_t id) {
  common::MutexLock lock(&mu_);
  watched_.erase(id);
}

void WriteWatchdog::Run() {
  common::MutexLock lock(&mu_);
  while (!stopping_) {
    auto earliest = std::chrono::steady_clock::time_point::max();
    const auto now = std::chrono::steady_clock::now();
    for (auto it = watched_.begin(); it != watched_.end();) {
      if (it->second.deadline <= now) {
        // Under mu_: Unwatch waits, so the context is that of a call still in its Write. Its
        // peer is read first: a cancelled call no longer knows it.
        const std::string peer = it->second.context->peer();
        it->second.context->TryCancel();
        cancelled_.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn(
            "a streamed reply to {} waited longer than its limit for its reader: the call "
            "was cancelled",
            peer);
        it = watched_.erase(it);
      } else {
        earliest = std::min(earliest, it->second.deadline);
        ++it;
      }
    }
    if (earliest == std::chrono::steady_clock::time_point::max()) {
      changed_.wait(mu_);
    } else {
      changed_.wait_until(mu_, earliest);
    }
  }
}

}  // namespace onset::coordinator
