#include "common/metric_limits.h"

#include <string>

#include "common/utf8.h"

namespace onset::common {
namespace {

// How much of a bad name an error message quotes.
constexpr size_t kQuotedNameBytes = 64;

bool AllowedInName(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_-./@:+=%").find(c) != std::string_view::npos;
}

std::string Quote(std::string_view name) {
  std::string quoted = "'" + SanitizeUtf8(TruncateUtf8(name, kQuotedNameBytes)) + "'";
  if (name.size() > kQuotedNameBytes) quoted += "...";
  return quoted;
}

}  // namespace

absl::Status CheckMetricName(std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("metric name: empty");
  if (name.size() > kMaxMetricNameBytes) {
    return absl::InvalidArgumentError("metric name " + Quote(name) + ": " +
                                      std::to_string(name.size()) + " bytes, at most " +
                                      std::to_string(kMaxMetricNameBytes));
  }
  for (char c : name) {
    if (!AllowedInName(c)) {
      return absl::InvalidArgumentError(
          "metric name " + Quote(name) +
          ": only ASCII letters, digits and _ - . / @ : + = % are allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTokens(int64_t tokens) {
  if (tokens >= 0 && tokens <= kMaxTokens) return absl::OkStatus();
  return absl::InvalidArgumentError("tokens " + std::to_string(tokens) + ": must be 0.." +
                                    std::to_string(kMaxTokens));
}

}  // namespace onset::common
