#include "db/write_failure_log.h"

#include <spdlog/spdlog.h>

namespace onset::db {

void WriteFailureLog::Failed(const std::string& what) {
  ++failed_;
  const auto now = now_();
  if (last_logged_ && now - *last_logged_ < interval_) {
    ++left_out_;
    return;
  }
  if (left_out_ > 0) {
    spdlog::error("{} ({} more failed writes not logged since the previous line)", what, left_out_);
  } else {
    spdlog::error("{}", what);
  }
  last_logged_ = now;
  left_out_ = 0;
}

void WriteFailureLog::Succeeded() {
  if (failed_ == 0) return;
  spdlog::info("database writes succeed again ({} failed before)", failed_);
  failed_ = 0;
  left_out_ = 0;
  last_logged_.reset();
}

}  // namespace onset::db
