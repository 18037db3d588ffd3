// Turns the trainer's metrics stream (one line per event, base/metrics_line.h) into metric points
// and keeps the progress figures the worker heartbeats with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onset::worker {

// One measurement, as stored by the coordinator.
struct MetricPoint {
  std::string name;    // e.g. "train/loss", "niah/acc@256"
  int64_t tokens = 0;  // tokens seen when it was measured
  double value = 0;
  int64_t at_unix_ms = 0;  // when it was measured (milliseconds since the Unix epoch); 0: unknown

  bool operator==(const MetricPoint& o) const {
    return name == o.name && tokens == o.tokens && value == o.value && at_unix_ms == o.at_unix_ms;
  }
};

// Not thread-safe: one parser per job, fed from one thread.
class MetricsParser {
 public:
  // `context` prefixes log messages, e.g. "cell 0123abcd attempt 2".
  explicit MetricsParser(std::string context = "") : context_(std::move(context)) {}

  // Parses one line of the stream and appends its points to `out`. A malformed line (one that
  // MetricsEvent::Parse refuses: not JSON, not an object, missing or mistyped "event", "tokens",
  // "metrics" or a metric value) is counted and logged, never fatal; blank lines are ignored.
  // Points outside common/metric_limits.h are dropped and counted, each alone: a bad name costs
  // its point, bad tokens (negative, above 1e15, not an int64) the points of its line, which
  // then do not count as progress either. A value that is not finite (null in the line) is a
  // NaN point, stored as "not finite".
  void Consume(std::string_view line, std::vector<MetricPoint>* out);

  int64_t tokens_done() const { return tokens_done_; }
  // Latest "train/tokens_per_second" seen, 0 before the first.
  double tokens_per_second() const { return tokens_per_second_; }
  std::optional<double> latest_loss() const { return latest_loss_; }
  int malformed_lines() const { return malformed_lines_; }
  // Points dropped for breaking the limits, and why the first one was.
  int64_t dropped_points() const { return dropped_points_; }
  const std::string& first_drop_reason() const { return first_drop_reason_; }
  // Whether a "diverged" / "done" event was seen.
  bool diverged() const { return diverged_; }
  bool done() const { return done_; }

 private:
  void Malformed(std::string_view line, std::string_view why);
  void Dropped(int64_t points, std::string_view why);

  std::string context_;
  int64_t tokens_done_ = 0;
  double tokens_per_second_ = 0;
  std::optional<double> latest_loss_;
  int malformed_lines_ = 0;
  int64_t dropped_points_ = 0;
  std::string first_drop_reason_;
  bool diverged_ = false;
  bool done_ = false;
};

}  // namespace onset::worker
