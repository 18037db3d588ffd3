#include "analysis/compare_params.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/metric_names.h"

namespace onset::analysis {
namespace {

absl::Status Invalid(const std::string& param, const std::string& must, const std::string& got) {
  return absl::InvalidArgumentError(param + ": must be " + must + ", got '" + got + "'");
}

}  // namespace

absl::StatusOr<CompareSpec> ParseCompareParams(const CompareParams& params,
                                               bool threshold_required) {
  CompareSpec spec;
  if (params.metric.empty()) return absl::InvalidArgumentError("metric: a metric name is required");
  spec.metric = params.metric;
  if (!params.threshold.empty()) {
    char* end = nullptr;
    errno = 0;
    spec.threshold = std::strtod(params.threshold.c_str(), &end);
    if (end == params.threshold.c_str() || *end != '\0' || errno == ERANGE ||
        !std::isfinite(spec.threshold)) {
      return Invalid("threshold", "a finite number", params.threshold);
    }
  } else if (threshold_required) {
    return absl::InvalidArgumentError("threshold: a number is required");
  }
  if (params.direction == "auto") {
    spec.direction = DefaultDirection(params.metric);
  } else if (params.direction == "up") {
    spec.direction = Direction::kUp;
  } else if (params.direction == "down") {
    spec.direction = Direction::kDown;
  } else {
    return Invalid("direction", "auto, up or down", params.direction);
  }
  if (params.x == "tokens") {
    spec.x = XAxis::kTokens;
  } else if (params.x == "flops") {
    spec.x = XAxis::kFlops;
  } else {
    return Invalid("x", "tokens or flops", params.x);
  }
  for (absl::string_view axis : absl::StrSplit(params.by, ',', absl::SkipWhitespace())) {
    spec.by.emplace_back(absl::StripAsciiWhitespace(axis));
  }
  if (!params.baseline.empty()) {
    const size_t eq = params.baseline.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == params.baseline.size()) {
      return Invalid("baseline", "AXIS=VALUE, e.g. arch=full", params.baseline);
    }
    spec.baseline = {params.baseline.substr(0, eq), params.baseline.substr(eq + 1)};
  }
  {
    char* end = nullptr;
    errno = 0;
    spec.level = std::strtod(params.level.c_str(), &end);
    if (params.level.empty() || end == params.level.c_str() || *end != '\0' ||
        !(spec.level >= 0.5 && spec.level <= 0.999)) {
      return Invalid("level", "a number from 0.5 to 0.999, e.g. 0.95", params.level);
    }
  }
  {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(params.bootstrap.c_str(), &end, 10);
    if (params.bootstrap.empty() || *end != '\0' || errno == ERANGE || n < 100 || n > 100000) {
      return Invalid("bootstrap", "an integer from 100 to 100000", params.bootstrap);
    }
    spec.bootstrap_resamples = static_cast<int>(n);
  }
  {
    char* end = nullptr;
    errno = 0;
    const unsigned long long seed = std::strtoull(params.bootstrap_seed.c_str(), &end, 10);
    if (params.bootstrap_seed.empty() || params.bootstrap_seed[0] == '-' || *end != '\0' ||
        errno == ERANGE) {
      return Invalid("bootstrap-seed", "an unsigned integer", params.bootstrap_seed);
    }
    spec.bootstrap_seed = seed;
  }
  if (params.best_over.empty()) {
    if (!params.select.empty() || !params.select_on_seeds.empty()) {
      return absl::InvalidArgumentError(
          "select: --select and --select-on-seeds choose the value of --best-over AXIS: name it");
    }
    return spec;
  }
  spec.best_over.axis = params.best_over;
  spec.best_over.metric = metric::kHeldoutLoss;
  spec.best_over.rule = BestOverSpec::Rule::kMin;
  if (!params.select.empty()) {
    const size_t colon = params.select.rfind(':');
    std::string rule = "min";
    spec.best_over.metric = params.select;
    if (colon != std::string::npos) {
      spec.best_over.metric = params.select.substr(0, colon);
      rule = params.select.substr(colon + 1);
    } else if (DefaultDirection(params.select) == Direction::kUp) {
      rule = "max";  // an accuracy is best high, a loss low
    }
    if (spec.best_over.metric.empty()) {
      return Invalid("select", "METRIC[:min|max|crossing]", params.select);
    }
    if (rule == "min") {
      spec.best_over.rule = BestOverSpec::Rule::kMin;
    } else if (rule == "max") {
      spec.best_over.rule = BestOverSpec::Rule::kMax;
    } else if (rule == "crossing") {
      spec.best_over.rule = BestOverSpec::Rule::kCrossing;
    } else {
      return Invalid("select", "METRIC[:min|max|crossing]", params.select);
    }
  }
  for (absl::string_view seed :
       absl::StrSplit(params.select_on_seeds, ',', absl::SkipWhitespace())) {
    spec.best_over.selection_seeds.emplace(absl::StripAsciiWhitespace(seed));
  }
  return spec;
}

}  // namespace onset::analysis
