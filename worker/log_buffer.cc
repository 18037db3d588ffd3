#include "worker/log_buffer.h"

#include <utility>

namespace onset::worker {

void LogBuffer::Add(std::string text, int64_t at_unix_ms) {
  common::MutexLock lock(&mu_);
  pending_bytes_ += text.size();
  pending_.push_back(LogLine{next_line_++, at_unix_ms, std::move(text)});
  Trim();
}

std::vector<LogLine> LogBuffer::Take(size_t max_lines, size_t max_bytes) {
  common::MutexLock lock(&mu_);
  std::vector<LogLine> taken;
  size_t bytes = 0;
  while (!pending_.empty() && taken.size() < max_lines) {
    const size_t size = pending_.front().text.size();
    if (!taken.empty() && bytes + size > max_bytes) break;
    bytes += size;
    pending_bytes_ -= size;
    taken.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  return taken;
}

void LogBuffer::PutBack(std::vector<LogLine> lines) {
  common::MutexLock lock(&mu_);
  for (const LogLine& line : lines) pending_bytes_ += line.text.size();
  pending_.insert(pending_.begin(), std::make_move_iterator(lines.begin()),
                  std::make_move_iterator(lines.end()));
  Trim();
}

size_t LogBuffer::pending() const {
  common::MutexLock lock(&mu_);
  return pending_.size();
}

int64_t LogBuffer::dropped() const {
  common::MutexLock lock(&mu_);
  return dropped_;
}

void LogBuffer::Trim() {
  while (!pending_.empty() && (pending_.size() > max_lines_ || pending_bytes_ > max_bytes_)) {
    pending_bytes_ -= pending_.front().text.size();
    pending_.pop_front();
    ++dropped_;
  }
}

}  // namespace onset::worker
