#include "worker/metrics_parser.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace onset::worker {
namespace {

constexpr size_t kLoggedLineChars = 200;
// Only the first few malformed lines are logged one by one; the count covers the rest.
constexpr int kLoggedMalformedLines = 10;

}  // namespace

void MetricsParser::Malformed(std::string_view line, const char* why) {
  ++malformed_lines_;
  if (malformed_lines_ <= kLoggedMalformedLines) {
    spdlog::warn("{}{}malformed metrics line ({}): {}", context_, context_.empty() ? "" : ": ",
                 why, line.substr(0, kLoggedLineChars));
  }
}

void MetricsParser::Consume(std::string_view line, std::vector<MetricPoint>* out) {
  if (std::all_of(line.begin(), line.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
    return;
  }
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Malformed(line, "not JSON");
  if (!j.is_object()) return Malformed(line, "not an object");
  auto event = j.find("event");
  if (event == j.end() || !event->is_string()) return Malformed(line, "no \"event\" string");
  auto tokens = j.find("tokens");
  if (tokens == j.end() || !tokens->is_number_integer()) {
    return Malformed(line, "no \"tokens\" integer");
  }
  auto metrics = j.find("metrics");
  if (metrics == j.end() || !metrics->is_object()) return Malformed(line, "no \"metrics\" object");

  const int64_t at = tokens->get<int64_t>();
  tokens_done_ = std::max(tokens_done_, at);
  const std::string& kind = event->get_ref<const std::string&>();
  if (kind == "diverged") diverged_ = true;
  if (kind == "done") done_ = true;

  for (const auto& [name, value] : metrics->items()) {
    if (!value.is_number()) continue;  // null: not measured at this point
    const double v = value.get<double>();
    if (name == "train/tokens_per_second") tokens_per_second_ = v;
    if (name == "train/loss") latest_loss_ = v;
    out->push_back(MetricPoint{name, at, v});
  }
}

}  // namespace onset::worker
