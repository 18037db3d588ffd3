#include "db/write_failure_log.h"

#include <spdlog/spdlog.h>

namespace onset::db {

void WriteFailureLog::Failed(const std::string& what) {
  ++failed_;
  int64_t left_out = 0;
  if (!throttle_.Occurred(1, &left_out)) return;
  if (left_out > 0) {
    spdlog::error("{} ({} more failed writes not logged since the previous line)", what, left_out);
  } else {
    spdlog::error("{}", what);
  }
}

void WriteFailureLog::Succeeded() {
  if (failed_ == 0) return;
  spdlog::info("database writes succeed again ({} failed before)", failed_);
  failed_ = 0;
  throttle_.Recovered();
}

}  // namespace onset::db
