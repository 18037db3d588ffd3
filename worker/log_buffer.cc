#include "worker/log_buffer.h"

#include <utility>

namespace onset::worker {

void LogBuffer::Add(std::string text, int64_t at_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back(LogLine{next_line_++, at_unix_ms, std::move(text)});
  Trim();
}

std::vector<LogLine> LogBuffer::Take(size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LogLine> taken;
  while (!pending_.empty() && taken.size() < max) {
    taken.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  return taken;
}

void LogBuffer::PutBack(std::vector<LogLine> lines) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.insert(pending_.begin(), std::make_move_iterator(lines.begin()),
                  std::make_move_iterator(lines.end()));
  Trim();
}

size_t LogBuffer::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

int64_t LogBuffer::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void LogBuffer::Trim() {
  while (pending_.size() > max_pending_) {
    pending_.pop_front();
    ++dropped_;
  }
}

}  // namespace onset::worker
