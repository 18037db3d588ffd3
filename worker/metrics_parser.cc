#include "worker/metrics_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/metric_limits.h"

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

  const std::string& kind = event->get_ref<const std::string&>();
  if (kind == "diverged") diverged_ = true;
  if (kind == "done") done_ = true;

  // Unsigned when above int64's range: read it as such rather than wrapped to a negative.
  absl::Status tokens_ok;
  int64_t at = 0;
  if (tokens->is_number_unsigned() &&
      tokens->get<uint64_t>() > static_cast<uint64_t>(common::kMaxTokens)) {
    tokens_ok = absl::InvalidArgumentError(absl::StrCat("tokens ", tokens->get<uint64_t>(),
                                                        ": must be 0..", common::kMaxTokens));
  } else {
    at = tokens->get<int64_t>();
    tokens_ok = common::CheckTokens(at);
  }
  if (!tokens_ok.ok()) {
    int64_t points = 0;
    for (const auto& item : metrics->items()) points += item.value().is_number() ? 1 : 0;
    return Dropped(points, std::string(tokens_ok.message()));
  }
  tokens_done_ = std::max(tokens_done_, at);

  for (const auto& [name, value] : metrics->items()) {
    if (!value.is_number()) continue;  // null: not measured at this point
    if (absl::Status s = common::CheckMetricName(name); !s.ok()) {
      Dropped(1, std::string(s.message()));
      continue;
    }
    double v = value.get<double>();
    if (std::isinf(v)) v = std::numeric_limits<double>::quiet_NaN();
    if (name == "train/tokens_per_second" && std::isfinite(v) && v >= 0) tokens_per_second_ = v;
    if (name == "train/loss") latest_loss_ = v;
    out->push_back(MetricPoint{name, at, v});
  }
}

}  // namespace onset::worker
