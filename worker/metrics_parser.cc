#include "worker/metrics_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "base/metric_names.h"
#include "base/metrics_line.h"
#include "common/metric_limits.h"

namespace onset::worker {
namespace {

constexpr size_t kLoggedLineChars = 200;
// Only the first few malformed lines are logged one by one; the count covers the rest.
constexpr int kLoggedMalformedLines = 10;

}  // namespace

void MetricsParser::Malformed(std::string_view line, std::string_view why) {
  ++malformed_lines_;
  if (malformed_lines_ <= kLoggedMalformedLines) {
    spdlog::warn("{}{}malformed metrics line ({}): {}", context_, context_.empty() ? "" : ": ", why,
                 line.substr(0, kLoggedLineChars));
  }
}

void MetricsParser::Dropped(int64_t points, std::string_view why) {
  if (points <= 0) return;
  if (dropped_points_ == 0) {
    first_drop_reason_ = std::string(why);
    spdlog::warn("{}{}dropped a metric point: {}; later ones are counted", context_,
                 context_.empty() ? "" : ": ", why);
  }
  dropped_points_ += points;
}

void MetricsParser::Consume(std::string_view line, std::vector<MetricPoint>* out) {
  if (std::all_of(line.begin(), line.end(),
                  [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
    return;
  }
  trainer::MetricsLineError error;
  std::optional<trainer::MetricsEvent> event = trainer::MetricsEvent::Parse(line, &error);
  if (error.tokens_beyond_int64) {
    // A line of the protocol whose tokens break the bounds, like those below: its points.
    return Dropped(
        static_cast<int64_t>(error.values),
        absl::StrCat("tokens ", *error.tokens_beyond_int64, ": must be 0..", common::kMaxTokens));
  }
  if (!event) return Malformed(line, error.what);

  if (event->event == trainer::kEventDiverged) diverged_ = true;
  if (event->event == trainer::kEventDone) done_ = true;

  const int64_t at = event->tokens;
  if (absl::Status s = common::CheckTokens(at); !s.ok()) {
    return Dropped(static_cast<int64_t>(event->metrics.size()), std::string(s.message()));
  }
  tokens_done_ = std::max(tokens_done_, at);
  // A trainer from before the wall time says none; a time no clock could show is not believed.
  const int64_t at_unix_ms = common::WallTimeOrUnknown(event->at_unix_ms.value_or(0));

  for (const auto& [name, value] : event->metrics) {
    if (absl::Status s = common::CheckMetricName(name); !s.ok()) {
      Dropped(1, std::string(s.message()));
      continue;
    }
    // Not finite (null in the line) is NaN, stored as such.
    if (name == metric::kTrainTokensPerSecond && std::isfinite(value) && value >= 0) {
      tokens_per_second_ = value;
    }
    if (name == metric::kTrainLoss) latest_loss_ = value;
    out->push_back(MetricPoint{name, at, value, at_unix_ms});
  }
}

}  // namespace onset::worker
