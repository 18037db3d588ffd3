#include "coordinator/notify/notifier.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log_throttle.h"
#include "common/mutex.h"

namespace onset::coordinator {
namespace {

// How often a backoff wait re-reads the injected clock: the real one needs no more than one
// wait, a test's FakeClock is only seen to move by looking.
constexpr std::chrono::milliseconds kClockRecheck{100};

std::chrono::milliseconds Backoff(const Notifier::Options& options, int failures) {
  std::chrono::milliseconds wait = std::max(options.backoff_min, std::chrono::milliseconds(1));
  for (int i = 1; i < failures && wait < options.backoff_max; ++i) wait *= 2;
  return std::min(wait, std::max(options.backoff_max, options.backoff_min));
}

}  // namespace

class Notifier::Channel {
 public:
  Channel(std::string url, WebhookPoster* poster, const common::Clock* clock,
          const Options& options)
      : url_(std::move(url)),
        redacted_(RedactedUrl(url_)),
        poster_(poster),
        clock_(clock),
        options_(options),
        throttle_(*clock, options.log_interval) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Channel() {
    BeginStop();
    Join();
  }

  void Push(const std::string& body) {
    std::string report;
    {
      common::MutexLock lock(&mu_);
      if (stopping_) return;
      if (queue_.size() >= std::max<size_t>(1, options_.queue_capacity)) {
        queue_.pop_front();
        ++stats_.dropped;
        ++dropped_since_report_;
        report = Report("the queue is full");
      }
      queue_.push_back(body);
    }
    wake_.notify_all();
    if (!report.empty()) spdlog::warn("{}", report);
  }

  // Tells the thread to stop (at once when it waits); Join then waits for it.
  void BeginStop() {
    common::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  void Join() {
    if (!thread_.joinable()) return;
    thread_.join();
    common::MutexLock lock(&mu_);
    const int64_t left = static_cast<int64_t>(queue_.size()) + (between_tries_ ? 1 : 0);
    if (left > 0) {
      spdlog::info("notify: webhook {}: {} notification(s) not sent at exit", redacted_, left);
    }
  }

  Stats stats() const {
    common::MutexLock lock(&mu_);
    Stats s = stats_;
    s.queued = static_cast<int64_t>(queue_.size()) + (between_tries_ ? 1 : 0);
    return s;
  }

 private:
  void Loop() {
    std::optional<std::string> body;  // the notification being tried
    int tries = 0;
    common::Clock::MonotonicTime retry_at;
    while (true) {
      {
        common::MutexLock lock(&mu_);
        if (!body) {
          while (!stopping_ && queue_.empty()) wake_.wait(mu_);
          if (stopping_) return;
          body = std::move(queue_.front());
          queue_.pop_front();
          tries = 0;
        } else if (!WaitUntil(retry_at)) {
          return;
        }
        between_tries_ = false;
      }
      // Without the mutex: Publish never waits for the network.
      const absl::Status status = poster_->Post(url_, *body, options_.request_timeout);
      ++tries;
      std::string warning, info;
      {
        common::MutexLock lock(&mu_);
        if (status.ok()) {
          ++stats_.sent;
          body.reset();
          // Not LogThrottle::Recovered: an endpoint that fails every other time would then be
          // logged on every failure.
          if (reported_failing_) {
            info = absl::StrCat("notify: webhook ", redacted_, ": delivering again");
            if (failed_since_report_ + dropped_since_report_ > 0) {
              absl::StrAppend(&info, " (", failed_since_report_, " failed tries and ",
                              dropped_since_report_,
                              " dropped notifications since the last report)");
            }
            failed_since_report_ = dropped_since_report_ = 0;
            reported_failing_ = false;
          }
        } else {
          ++stats_.failed_attempts;
          ++failed_since_report_;
          const bool may_pass = absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
          if (!may_pass || tries >= options_.max_attempts) {
            ++stats_.dropped;
            ++dropped_since_report_;
            body.reset();
          } else {
            retry_at = clock_->MonotonicNow() + Backoff(options_, tries);
            between_tries_ = true;
          }
          warning = Report(std::string(status.message()));
        }
      }
      if (!warning.empty()) spdlog::warn("{}", warning);
      if (!info.empty()) spdlog::info("{}", info);
    }
  }

  // Waits until `deadline` by clock_; false when told to stop first.
  bool WaitUntil(common::Clock::MonotonicTime deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!stopping_) {
      const common::Clock::MonotonicTime now = clock_->MonotonicNow();
      if (now >= deadline) return true;
      wake_.wait_for(mu_,
                     std::min<std::chrono::steady_clock::duration>(deadline - now, kClockRecheck));
    }
    return false;
  }

  // A failure happened (`error`): the warning to log now, or "" while the throttle holds it
  // back (the counts carry over to the next one).
  std::string Report(const std::string& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!throttle_.Occurred()) return "";
    std::string line = absl::StrCat("notify: webhook ", redacted_, ": ", failed_since_report_,
                                    " failed tries and ", dropped_since_report_,
                                    " dropped notifications since the last report (", stats_.sent,
                                    " sent in all); last error: ", error);
    failed_since_report_ = dropped_since_report_ = 0;
    reported_failing_ = true;
    return line;
  }

  const std::string url_;
  const std::string redacted_;  // what messages show of url_
  WebhookPoster* const poster_;
  const common::Clock* const clock_;
  const Options options_;

  mutable common::Mutex mu_;
  std::condition_variable_any wake_;  // queued, or stopping_
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool between_tries_ ABSL_GUARDED_BY(mu_) = false;  // the thread holds one to retry
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  common::LogThrottle throttle_ ABSL_GUARDED_BY(mu_);
  int64_t failed_since_report_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_since_report_ ABSL_GUARDED_BY(mu_) = 0;
  bool reported_failing_ ABSL_GUARDED_BY(mu_) = false;  // a warning was logged since a success
  std::thread thread_;
};

Notifier::Notifier(std::vector<std::string> urls, WebhookPoster* poster, const common::Clock* clock,
                   const Options& options) {
  channels_.reserve(urls.size());
  for (std::string& url : urls) {
    channels_.push_back(std::make_unique<Channel>(std::move(url), poster, clock, options));
  }
}

Notifier::~Notifier() { Stop(); }

void Notifier::Publish(const Notification& notification) {
  if (channels_.empty()) return;
  const std::string body = NotificationJson(notification);
  for (const std::unique_ptr<Channel>& channel : channels_) channel->Push(body);
}

void Notifier::Stop() {
  common::MutexLock lock(&stop_mu_);
  // All told first, so that the threads stop together: a POST in flight on one URL does not
  // hold up the others.
  for (const std::unique_ptr<Channel>& channel : channels_) channel->BeginStop();
  for (const std::unique_ptr<Channel>& channel : channels_) channel->Join();
}

Notifier::Stats Notifier::stats() const {
  Stats sum;
  for (const std::unique_ptr<Channel>& channel : channels_) {
    const Stats s = channel->stats();
    sum.sent += s.sent;
    sum.failed_attempts += s.failed_attempts;
    sum.dropped += s.dropped;
    sum.queued += s.queued;
  }
  return sum;
}

Notifier::Stats Notifier::stats(size_t index) const { return channels_.at(index)->stats(); }

}  // namespace onset::coordinator
