#include "model/training/metrics_writer.h"

#include <cstring>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/posix_io.h"

namespace onset::model {

std::string MetricsEvent::ToJsonLine() const {
  // ordered_json keeps "event", "tokens", "step", "metrics" in this order for human readers.
  nlohmann::ordered_json j;
  j["event"] = event;
  j["tokens"] = tokens;
  if (step) j["step"] = *step;
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  for (const auto& [name, value] : metrics) m[name] = value;  // NaN/inf dump as null
  j["metrics"] = std::move(m);
  return j.dump();
}

std::optional<MetricsEvent> MetricsEvent::FromJsonLine(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("event") || !j["event"].is_string() ||
      !j.contains("tokens") || !j["tokens"].is_number_integer() || !j.contains("metrics") ||
      !j["metrics"].is_object()) {
    return std::nullopt;
  }
  MetricsEvent e;
  e.event = j["event"].get<std::string>();
  e.tokens = j["tokens"].get<int64_t>();
  if (j.contains("step") && j["step"].is_number_integer()) e.step = j["step"].get<int64_t>();
  for (const auto& [name, value] : j["metrics"].items()) {
    e.metrics[name] = value.is_number() ? value.get<double>()
                                        : std::numeric_limits<double>::quiet_NaN();
  }
  return e;
}

void JsonLinesSink::Emit(const MetricsEvent& event) {
  if (int err = base::WriteAll(fd_, event.ToJsonLine() + "\n"); err != 0) {
    throw std::runtime_error("writing metrics to fd " + std::to_string(fd_) + ": " +
                             std::strerror(err));
  }
}

}  // namespace onset::model
