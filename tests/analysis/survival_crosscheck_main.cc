// onset's survival statistics for the cross-check against lifelines (lifelines_crosscheck.py):
// reads one case per line on stdin,
//   {"group": [[KIND, AT], ...], "baseline": [[KIND, AT], ...], "level": 0.95}
// (KIND: "exact", "left", "right") and writes one line per case: the group's Kaplan-Meier steps
// (at, survival), its median and the median's interval, and the log-rank test of the group
// against the baseline.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/logrank.h"
#include "analysis/median_interval.h"
#include "analysis/survival.h"

namespace {

using onset::analysis::Crossing;

std::vector<Crossing> Read(const nlohmann::json& cells) {
  std::vector<Crossing> out;
  for (const nlohmann::json& c : cells) {
    const std::string kind = c.at(0).get<std::string>();
    out.push_back({kind == "exact"  ? Crossing::kExact
                   : kind == "left" ? Crossing::kLeft
                                    : Crossing::kRight,
                   c.at(1).get<double>()});
  }
  return out;
}

nlohmann::json Write(const Crossing& c) {
  static const char* kKinds[] = {"exact", "left", "right", "unknown"};
  return {kKinds[c.kind], c.at};
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const nlohmann::json in = nlohmann::json::parse(line);
    const std::vector<Crossing> group = Read(in.at("group"));
    const std::vector<Crossing> baseline = Read(in.at("baseline"));
    const double level = in.at("level").get<double>();
    const onset::analysis::Emergence e = onset::analysis::KaplanMeier(group);
    nlohmann::json steps = nlohmann::json::array();
    for (const onset::analysis::EmergenceStep& s : e.steps) {
      steps.push_back({s.at, 1.0 - s.emerged});
    }
    const onset::analysis::MedianInterval i =
        onset::analysis::KaplanMeierMedianInterval(group, level);
    const onset::analysis::LogRank t = onset::analysis::LogRankTest(group, baseline);
    std::cout << nlohmann::json{{"steps", steps},
                                {"median", Write(e.median)},
                                {"lower", Write(i.lower)},
                                {"upper", Write(i.upper)},
                                {"logrank_defined", t.defined},
                                {"statistic", t.statistic},
                                {"p_value", t.p_value}}
                     .dump()
              << "\n";
  }
  return 0;
}
