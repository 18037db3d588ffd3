#include "cli/views/progress_log.h"

#include <string_view>

namespace onset::cli {
namespace {

// "demo: 9 cells: 2 running, 7 queued" of "demo: 9 cells: 2 running, 7 queued | fc4d7eeb ...".
std::string_view Summary(std::string_view line) { return line.substr(0, line.find(" | ")); }

}  // namespace

std::string ProgressLog::Take(const std::string& line, int64_t now_ms) {
  if (line.empty() || (printed_any_ && line == printed_)) return "";
  const bool states_changed = !printed_any_ || Summary(line) != Summary(printed_);
  if (!states_changed && now_ms - printed_at_ms_ < every_ms_) return "";
  printed_any_ = true;
  printed_ = line;
  printed_at_ms_ = now_ms;
  return line + "\n";
}

}  // namespace onset::cli
