#include "base/metric_names.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace onset::metric {
namespace {

// The non-negative decimal integer that is all of `text`; nullopt otherwise.
std::optional<int> WholeNumber(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

std::string Joined(std::string_view a, std::string_view b) {
  std::string out(a);
  out += b;
  return out;
}

}  // namespace

std::string VariantGroup(std::string_view variant) { return Joined(kNiahFamily, variant); }
std::string GroupAcc(std::string_view group) { return Joined(group, "/acc"); }

std::string AblationKindAcc(std::string_view kind) {
  return Joined(Joined(kAblationFamily, kind), "/niah_acc");
}
std::string AblationKindHeads(std::string_view kind) {
  return Joined(Joined(kAblationFamily, kind), "/heads");
}

std::string SpreadMean(std::string_view prefix) { return Joined(prefix, "niah_acc_mean"); }
std::string SpreadStd(std::string_view prefix) { return Joined(prefix, "niah_acc_std"); }
std::string SpreadMin(std::string_view prefix) { return Joined(prefix, "niah_acc_min"); }
std::string SpreadMax(std::string_view prefix) { return Joined(prefix, "niah_acc_max"); }
std::string SpreadDraws(std::string_view prefix) { return Joined(prefix, "draws"); }

std::string HeadlineMetric(const std::vector<std::string>& names) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  for (const std::string& name : sorted) {
    if (StartsWith(name, kNiahAcc)) return name;
  }
  for (const std::string& name : sorted) {
    if (name == kTrainLoss) return name;
  }
  return sorted.empty() ? "" : sorted.front();
}

std::string AtLength(std::string_view base, int length) {
  return Joined(base, "@" + std::to_string(length));
}

std::optional<int> LengthOf(std::string_view name, std::string_view base) {
  if (!StartsWith(name, base) || name.size() <= base.size() || name[base.size()] != '@') {
    return std::nullopt;
  }
  return WholeNumber(name.substr(base.size() + 1));
}

std::string AtDepth(std::string_view base, double depth) {
  char text[32];
  std::snprintf(text, sizeof text, "@%g", depth);
  return Joined(base, text);
}

bool IsAtDepth(std::string_view name, std::string_view base) {
  return StartsWith(name, base) && name.size() > base.size() + 1 && name[base.size()] == '@';
}

std::string HeadName(std::string_view prefix, int layer, int head) {
  return Joined(prefix, "l" + std::to_string(layer) + "h" + std::to_string(head));
}

std::optional<Head> ParseHeadName(std::string_view name, std::string_view prefix) {
  if (!StartsWith(name, prefix)) return std::nullopt;
  std::string_view rest = name.substr(prefix.size());
  if (rest.empty() || rest[0] != 'l') return std::nullopt;
  const size_t h = rest.find('h');
  if (h == std::string_view::npos) return std::nullopt;
  const std::optional<int> layer = WholeNumber(rest.substr(1, h - 1));
  const std::optional<int> head = WholeNumber(rest.substr(h + 1));
  if (!layer || !head) return std::nullopt;
  return Head{*layer, *head};
}

bool StartsWith(std::string_view name, std::string_view prefix) {
  return name.substr(0, prefix.size()) == prefix;
}

bool IsEvaluationMetric(std::string_view name) {
  for (const char* family : kEvaluationFamilies) {
    if (StartsWith(name, family)) return true;
  }
  return false;
}

bool DescribesTheMachine(std::string_view name) {
  constexpr std::string_view kSeconds = "seconds";
  const bool timing =
      name.size() >= kSeconds.size() && name.substr(name.size() - kSeconds.size()) == kSeconds;
  return timing || name == kTrainTokensPerSecond || name == kTrainMfu ||
         name == kTrainPeakRssBytes || name == kTrainPeakCudaBytes;
}

bool IsSpreadDetail(std::string_view name) {
  return StartsWith(name, kAblationRandomK) && name != SpreadMean(kAblationRandomK);
}

std::vector<std::string> ControlsOf(std::string_view metric) {
  if (!StartsWith(metric, kNiahAcc)) return {};
  if (const std::optional<int> length = LengthOf(metric, kNiahAcc)) {
    return {AtLength(kKeySwapRate, *length), AtLength(kDistractorCopyRate, *length)};
  }
  return {kKeySwapRate, kDistractorCopyRate};
}

bool IsKeySwap(std::string_view metric) {
  return metric == kKeySwapRate || LengthOf(metric, kKeySwapRate).has_value();
}

}  // namespace onset::metric
