#include "common/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace onset::common {
namespace {

const char* TypeName(PrometheusText::Type type) {
  switch (type) {
    case PrometheusText::Type::kCounter:
      return "counter";
    case PrometheusText::Type::kGauge:
      return "gauge";
    case PrometheusText::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// HELP text escapes only \ and newline.
std::string EscapeHelp(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Counts as integers, other values in plain decimals where they are short ("0.0005", not
  // "5e-04"), both as clients' libraries write them; the rest in the shortest form.
  if (value == std::trunc(value) && std::fabs(value) < 9e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buffer[64];
  const double magnitude = std::fabs(value);
  const std::to_chars_result r =
      magnitude >= 1e-6 && magnitude < 1e15
          ? std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed)
          : std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, r.ptr);
}

void PrometheusText::Family(std::string_view name, Type type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += EscapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += TypeName(type);
  out_ += '\n';
}

void PrometheusText::Line(std::string_view name, const MetricLabels& labels,
                          std::string_view value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += EscapeLabelValue(labels[i].second);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += value;
  out_ += '\n';
}

void PrometheusText::Sample(std::string_view name, const MetricLabels& labels, double value) {
  Line(name, labels, FormatSampleValue(value));
}

void PrometheusText::Histogram(std::string_view name, const MetricLabels& labels,
                               const LatencyHistogram::Snapshot& histogram) {
  const std::string bucket = std::string(name) + "_bucket";
  MetricLabels with_le = labels;
  with_le.emplace_back("le", "");
  for (size_t i = 0; i < histogram.bounds.size(); ++i) {
    with_le.back().second = FormatSampleValue(histogram.bounds[i]);
    Line(bucket, with_le, std::to_string(histogram.cumulative[i]));
  }
  with_le.back().second = "+Inf";
  Line(bucket, with_le, std::to_string(histogram.count));
  Line(std::string(name) + "_sum", labels, FormatSampleValue(histogram.sum));
  Line(std::string(name) + "_count", labels, std::to_string(histogram.count));
}

}  // namespace onset::common
