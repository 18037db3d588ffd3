#include "base/metrics_line.h"

#include <cmath>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

namespace onset::trainer {
namespace {

// A parse error quotes what it last read, which may be a whole line: keep the start.
constexpr size_t kMaxErrorChars = 160;

std::optional<MetricsEvent> Fail(MetricsLineError* error, std::string what) {
  if (error != nullptr) *error = MetricsLineError{std::move(what), std::nullopt, 0};
  return std::nullopt;
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ..." without
// the bracketed id, cut to kMaxErrorChars.
std::string ErrorText(const nlohmann::json::exception& e) {
  std::string what = e.what();
  if (auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
  if (what.size() > kMaxErrorChars) what = what.substr(0, kMaxErrorChars) + "...";
  return what;
}

}  // namespace

std::string MetricsEvent::Format() const {
  // ordered_json keeps "event", "tokens", "step", "at_unix_ms", "metrics" in this order for human
  // readers.
  nlohmann::ordered_json j;
  j["event"] = event;
  j["tokens"] = tokens;
  if (step) j["step"] = *step;
  if (at_unix_ms) j["at_unix_ms"] = *at_unix_ms;
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  for (const auto& [name, value] : metrics) {
    m[name] = std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json();
  }
  j["metrics"] = std::move(m);
  return j.dump();
}

std::optional<MetricsEvent> MetricsEvent::Parse(std::string_view line, MetricsLineError* error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line.begin(), line.end());
  } catch (const nlohmann::json::exception& e) {  // a syntax error, a number beyond double
    return Fail(error, "not JSON: " + ErrorText(e));
  }
  if (!j.is_object()) return Fail(error, "not a JSON object");
  const auto event = j.find("event");
  if (event == j.end() || !event->is_string()) return Fail(error, "no \"event\" string");
  const auto tokens = j.find("tokens");
  if (tokens == j.end() || !tokens->is_number_integer()) {
    return Fail(error, "no \"tokens\" integer");
  }
  const auto metrics = j.find("metrics");
  if (metrics == j.end() || !metrics->is_object()) return Fail(error, "no \"metrics\" object");
  const auto step = j.find("step");
  if (step != j.end() && !(step->is_number_integer() &&
                           (!step->is_number_unsigned() ||
                            step->get<uint64_t>() <= std::numeric_limits<int64_t>::max()))) {
    return Fail(error, "\"step\" is not an integer of int64's range");
  }
  const auto at = j.find("at_unix_ms");
  if (at != j.end() &&
      !(at->is_number_integer() && (!at->is_number_unsigned() ||
                                    at->get<uint64_t>() <= std::numeric_limits<int64_t>::max()))) {
    return Fail(error, "\"at_unix_ms\" is not an integer of int64's range");
  }

  MetricsEvent e;
  e.event = event->get<std::string>();
  if (step != j.end()) e.step = step->get<int64_t>();
  if (at != j.end()) e.at_unix_ms = at->get<int64_t>();
  for (const auto& [name, value] : metrics->items()) {
    if (value.is_null()) {
      e.metrics[name] = std::numeric_limits<double>::quiet_NaN();
    } else if (value.is_number()) {
      const double v = value.get<double>();
      e.metrics[name] = std::isfinite(v) ? v : std::numeric_limits<double>::quiet_NaN();
    } else {
      return Fail(error, "metric \"" + name.substr(0, kMaxErrorChars) +
                             "\": " + std::string(value.type_name()) + ", not a number or null");
    }
  }
  // Unsigned when above int64's range: say so with the number as written, not wrapped.
  if (tokens->is_number_unsigned() &&
      tokens->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    const uint64_t n = tokens->get<uint64_t>();
    if (error != nullptr) {
      *error = MetricsLineError{"\"tokens\" " + std::to_string(n) + ": beyond int64's range", n,
                                e.metrics.size()};
    }
    return std::nullopt;
  }
  e.tokens = tokens->get<int64_t>();
  return e;
}

}  // namespace onset::trainer
