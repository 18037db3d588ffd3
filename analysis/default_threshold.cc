#include "analysis/default_threshold.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace onset::analysis {
namespace {

bool IsRate(const std::string& metric) {
  if (metric.rfind("acc", 0) == 0 || metric.find("/acc") != std::string::npos) return true;
  return metric.find("rate") != std::string::npos;
}

std::optional<double> Median(std::vector<double> xs) {
  if (xs.empty()) return std::nullopt;
  std::sort(xs.begin(), xs.end());
  const size_t h = xs.size() / 2;
  return xs.size() % 2 == 1 ? xs[h] : (xs[h - 1] + xs[h]) / 2;
}

}  // namespace

std::optional<DefaultThreshold> ChooseThreshold(const std::string& metric, const Curves& curves) {
  if (IsRate(metric)) return DefaultThreshold{0.5, "for a rate"};
  std::vector<double> firsts, lasts;
  for (const auto& [cell, by_metric] : curves) {
    auto it = by_metric.find(metric);
    if (it == by_metric.end()) continue;
    std::vector<double> finite;
    for (const auto& [tokens, value] : it->second) {
      if (std::isfinite(value)) finite.push_back(value);
    }
    if (finite.empty()) continue;
    firsts.push_back(finite.front());
    lasts.push_back(finite.back());
  }
  const std::optional<double> a = Median(firsts);
  const std::optional<double> b = Median(lasts);
  if (!a || !b) return std::nullopt;
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", (*a + *b) / 2);
  return DefaultThreshold{std::strtod(text, nullptr),
                          "halfway between the cells' median first and last values"};
}

}  // namespace onset::analysis
