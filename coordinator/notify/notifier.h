// The webhook queue: Publish hands a notification to every configured URL and returns at once;
// a thread per URL POSTs them in order, retrying what may pass later with exponential backoff,
// so that a slow or hanging receiver delays neither the caller nor the other URLs.
//
// Per URL: a bounded queue (a full one drops its oldest notification, counted); one POST at a
// time, bounded by request_timeout; a failure that may pass (WebhookPoster: Unavailable) is
// retried after backoff_min * 2^(n-1), at most backoff_max, until max_attempts tries; any other
// failure drops the notification at once. Later notifications wait behind one being retried, so
// a receiver sees them in order. A receiver that took a POST but answered late or with a 5xx
// gets it again (at least once, while tries last); the queues live in memory only and are lost
// at exit.
//
// Failures cost a warning per URL per log_interval at most (common/log_throttle.h), which says
// how many tries failed and how many notifications were dropped since the last one, and the last
// error, and the first success after a warning an info line; URLs appear only as RedactedUrl
// (webhook_poster.h) shows them.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "coordinator/notify/notification.h"
#include "coordinator/notify/webhook_poster.h"

namespace onset::coordinator {

class Notifier {
 public:
  struct Options {
    size_t queue_capacity = 1000;  // notifications waiting per URL, at most
    std::chrono::milliseconds request_timeout{10'000};
    int max_attempts = 6;  // tries per notification
    std::chrono::milliseconds backoff_min{1'000};
    std::chrono::milliseconds backoff_max{5 * 60'000};
    std::chrono::milliseconds log_interval{60'000};
  };

  struct Stats {
    int64_t sent = 0;             // delivered (a 2xx answer)
    int64_t failed_attempts = 0;  // POSTs that failed, retried or not
    int64_t dropped = 0;          // given up on: not retryable, out of tries, or pushed out of a
                                  // full queue
    int64_t queued = 0;           // waiting now, one between tries included
  };

  // Starts a thread per URL. `poster` and `clock` must outlive the notifier; backoff waits
  // follow `clock` (re-read at least every 100 ms, so a test's FakeClock is noticed). Check the
  // URLs with CheckWebhookUrl first: a bad one fails every POST (and is dropped, logged).
  Notifier(std::vector<std::string> urls, WebhookPoster* poster, const common::Clock* clock,
           const Options& options);
  Notifier(std::vector<std::string> urls, WebhookPoster* poster, const common::Clock* clock)
      : Notifier(std::move(urls), poster, clock, Options()) {}
  ~Notifier();  // Stop()
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Queues `notification` for every URL. Never waits for the network: it takes each URL's
  // mutex briefly (and may write a throttled log line when a queue overflows). Nothing after
  // Stop().
  void Publish(const Notification& notification);

  // Stops the threads: retry waits end at once; a POST in flight is waited for, which the
  // poster bounds by request_timeout. What is still queued is not sent (logged). Idempotent.
  void Stop();

  // Over every URL, and for the URL at `index` of the constructor's list.
  Stats stats() const;
  Stats stats(size_t index) const;
  size_t url_count() const { return channels_.size(); }

 private:
  class Channel;                                    // one URL: its queue and thread
  std::vector<std::unique_ptr<Channel>> channels_;  // set in the constructor only
  common::Mutex stop_mu_;  // held through Stop: two callers never join a thread twice
};

}  // namespace onset::coordinator
