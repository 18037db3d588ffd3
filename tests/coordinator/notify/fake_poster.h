// A WebhookPoster for the notifier's tests: records every POST, answers from a script per URL
// (OK once the script is used up), and can hold a URL's POSTs until released, or until the
// request's timeout passes, as a receiver that accepts and never answers would.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/notify/webhook_poster.h"

namespace onset::coordinator::testing {

class FakePoster final : public WebhookPoster {
 public:
  struct Call {
    std::string url;
    std::string body;
    std::chrono::steady_clock::time_point at;
  };

  // The answers of the next POSTs to `url`, in order.
  void Script(const std::string& url, std::vector<absl::Status> answers) {
    std::lock_guard<std::mutex> lock(mu_);
    for (absl::Status& s : answers) script_[url].push_back(std::move(s));
  }
  // POSTs to `url` wait until Release(url) or their timeout (then Unavailable).
  void Hang(const std::string& url) {
    std::lock_guard<std::mutex> lock(mu_);
    hanging_[url] = true;
  }
  void Release(const std::string& url) {
    std::lock_guard<std::mutex> lock(mu_);
    hanging_[url] = false;
    changed_.notify_all();
  }

  absl::Status Post(const std::string& url, const std::string& json_body,
                    std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    calls_.push_back(Call{url, json_body, std::chrono::steady_clock::now()});
    changed_.notify_all();
    if (!changed_.wait_for(lock, timeout, [&] { return !hanging_[url]; })) {
      return absl::UnavailableError("POST " + RedactedUrl(url) + ": timed out");
    }
    std::deque<absl::Status>& answers = script_[url];
    if (answers.empty()) return absl::OkStatus();
    absl::Status answer = answers.front();
    answers.pop_front();
    return answer;
  }

  std::vector<Call> Calls(const std::string& url) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Call> calls;
    for (const Call& c : calls_) {
      if (c.url == url) calls.push_back(c);
    }
    return calls;
  }
  // Waits (up to `timeout`) until `url` was posted to `n` times; whether it was.
  bool WaitForCalls(const std::string& url, size_t n,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, timeout, [&] {
      size_t count = 0;
      for (const Call& c : calls_) count += c.url == url ? 1 : 0;
      return count >= n;
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Call> calls_;
  std::map<std::string, std::deque<absl::Status>> script_;
  std::map<std::string, bool> hanging_;
};

}  // namespace onset::coordinator::testing
