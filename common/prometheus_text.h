// Writing metrics in the Prometheus text exposition format (version 0.0.4), the format every
// Prometheus server and `promtool check metrics` read: per family a HELP and a TYPE line, then
// its samples, label values escaped. Names are the caller's constants; label values may be
// anything (study names, error codes) and are escaped here.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/latency_histogram.h"

namespace onset::common {

// The Content-Type of a text exposition.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  // Starts a family: its HELP and TYPE lines. Its samples follow, before the next family.
  void Family(std::string_view name, Type type, std::string_view help);
  // One sample of a counter or gauge family `name`.
  void Sample(std::string_view name, const MetricLabels& labels, double value);
  // The samples of one histogram of family `name`: NAME_bucket per bound and +Inf, NAME_sum
  // and NAME_count.
  void Histogram(std::string_view name, const MetricLabels& labels,
                 const LatencyHistogram::Snapshot& histogram);

  const std::string& text() const { return out_; }

 private:
  void Line(std::string_view name, const MetricLabels& labels, std::string_view value);

  std::string out_;
};

// A label value with \, " and newline escaped as the format requires.
std::string EscapeLabelValue(std::string_view value);
// A sample value: an integer as one ("42"), else the shortest decimal that reads back as
// `value` (plain between 1e-6 and 1e15), NaN, +Inf or -Inf.
std::string FormatSampleValue(double value);

}  // namespace onset::common
