// A client of the lifecycle simulator that stops reading (simulation.h): it opens one of onsetd's
// streamed replies on a raw gRPC stub, reads nothing for a while, then reads what still comes,
// on a thread of its own. Its channel never grows its flow-control windows (no BDP probing, a
// fixed 64 KiB per stream), and what it asks for is more than that (a backup of a database of
// hundreds of KiB, a watch whose snapshot is some 125 KiB, a dry run's answer of 2,500 cells), so
// the reply's writes block on it. onsetd promises (--stalled-reader-limit-ms) that a streamed reply
// which waits for its reader longer than the limit has its call cancelled: Outcome says whether it
// was.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace onset::sim {

enum class StalledCall {
  kBackup,  // Backup
  kWatch,   // WatchStudy of `study` from a snapshot
  kDryRun,  // SubmitStudy of `yaml` with dry_run
};

// How far a stream's flow-control window lets a reply run ahead of a reader that reads nothing.
inline constexpr int kStalledReaderWindowBytes = 64 * 1024;

class StalledReader {
 public:
  struct Outcome {
    // The call ended with CANCELLED before this client gave up: the coordinator cancelled it.
    bool cancelled_by_coordinator = false;
    // It ran to its end (OK) or until this client's deadline (DEADLINE_EXCEEDED) and sent more
    // than the window holds: the coordinator's write waited on the reader throughout the stall
    // and the call was not cancelled.
    bool waited_throughout = false;
    std::string status;  // the call's code and message
    int messages = 0;    // read after the stall
    int64_t bytes = 0;   // their size
  };

  // Opens the call now; reads nothing for `stall`, then reads until the call ends or `stall +
  // drain` has passed since it opened (its deadline).
  StalledReader(StalledCall call, std::string address, std::string token, std::string study,
                std::string yaml, std::chrono::milliseconds stall, std::chrono::milliseconds drain);
  ~StalledReader();  // waits for the call to end (at its deadline at the latest)
  StalledReader(const StalledReader&) = delete;
  StalledReader& operator=(const StalledReader&) = delete;

  // Blocks until the call has ended.
  const Outcome& Wait();
  bool Ended() const { return ended_.load(); }
  StalledCall call() const { return call_; }
  int64_t opened_unix_ms() const { return opened_unix_ms_; }
  // When the call ended (after Wait or once Ended).
  int64_t ended_unix_ms() const { return ended_unix_ms_; }

 private:
  void Run(std::string address, std::string token, std::string study, std::string yaml,
           std::chrono::milliseconds stall, std::chrono::milliseconds drain);

  const StalledCall call_;
  const int64_t opened_unix_ms_;
  int64_t ended_unix_ms_ = 0;
  Outcome outcome_;
  std::atomic<bool> ended_{false};
  std::thread thread_;
};

}  // namespace onset::sim
