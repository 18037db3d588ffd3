#include "model/training/stop_request.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/trainer_contract.h"

namespace onset::model {
namespace {

// Lock-free, so it may be set from a signal handler.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void OnStopSignal(int) { g_stop.store(true, std::memory_order_relaxed); }

// Under a supervisor: the newest checkpoint the coordinator recorded, in tokens (0: none yet).
std::atomic<bool> g_supervised{false};
std::atomic<int64_t> g_recorded{0};

// "recorded TOKENS": the coordinator recorded the checkpoint at TOKENS.
void TakeAcknowledgement(const std::string& line) {
  const std::string prefix = std::string(trainer::kSupervisorRecorded) + " ";
  if (line.rfind(prefix, 0) != 0) return;
  char* end = nullptr;
  const long long tokens = std::strtoll(line.c_str() + prefix.size(), &end, 10);
  if (end == line.c_str() + prefix.size() || *end != '\0' || tokens < 0) return;
  int64_t seen = g_recorded.load();
  while (tokens > seen && !g_recorded.compare_exchange_weak(seen, tokens)) {
  }
}

}  // namespace

void InstallStopHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
}

void DieWithSupervisor(int fd, bool read_acknowledgements) {
  g_supervised.store(true);
  std::thread([fd, read_acknowledgements] {
    std::string line;
    while (true) {
      // Only the reader asks for data; the others are woken by the hang-up alone.
      pollfd pfd{fd, static_cast<short>(read_acknowledgements ? POLLIN : 0), 0};
      const int ready = ::poll(&pfd, 1, -1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready > 0 && (pfd.revents & POLLIN) != 0) {
        char buf[256];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
          // The supervisor wrote: acknowledgements, not an end.
          for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] != '\n') {
              if (line.size() < 64) line.push_back(buf[i]);
              continue;
            }
            TakeAcknowledgement(line);
            line.clear();
          }
          continue;
        }
      }
      // Hang-up, EOF, or a descriptor that cannot be watched: the supervisor is gone.
      static const char kSay[] = "onset-train: the worker supervising this run is gone: stopping\n";
      (void)!::write(2, kSay, sizeof kSay - 1);
      if (::getpgrp() == ::getpid()) ::kill(0, SIGKILL);
      ::_exit(trainer::kExitStopped);
    }
  }).detach();
}

std::optional<int64_t> KeepCheckpointsFrom() {
  if (!g_supervised.load()) return std::nullopt;
  return g_recorded.load();
}

bool StopRequested() { return g_stop.load(std::memory_order_relaxed); }
void RequestStop() { g_stop.store(true, std::memory_order_relaxed); }
void ClearStopRequest() { g_stop.store(false, std::memory_order_relaxed); }

}  // namespace onset::model
