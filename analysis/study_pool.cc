#include "analysis/study_pool.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onset::analysis {
namespace {

// Duplicate candidates are checked by their configs, one read each; past this many the rest
// are taken as distinct (and said so) rather than let a comparison make 100,000 reads.
constexpr int kMaxConfigChecks = 10'000;

// What must match for two cells to be candidates: their axes and budget.
std::string CandidateKey(const v1::Cell& cell) {
  std::map<std::string, std::string> axes(cell.axes().begin(), cell.axes().end());
  std::string key = std::to_string(cell.tokens_budget());
  for (const auto& [k, v] : axes) absl::StrAppend(&key, "\x1f", k, "=", v);
  return key;
}

std::optional<double> FinalOf(const Curves& curves, const std::string& cell,
                              const std::string& metric) {
  auto c = curves.find(cell);
  if (c == curves.end()) return std::nullopt;
  auto m = c->second.find(metric);
  if (m == c->second.end() || m->second.empty()) return std::nullopt;
  return m->second.back().second;  // points come in token order
}

// The metrics whose final values two runs of one experiment are compared on.
std::vector<std::string> ComparedMetrics(const std::vector<std::string>& asked,
                                         const Curves& curves, const std::string& cell) {
  if (!asked.empty()) return {asked.front()};
  std::vector<std::string> out;
  if (auto c = curves.find(cell); c != curves.end()) {
    for (const auto& [metric, points] : c->second) out.push_back(metric);
  }
  return out;
}

bool Differ(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) != std::isnan(b);
  return std::fabs(a - b) > 1e-9 * std::max(1.0, std::fabs(a));
}

}  // namespace

std::string ConfigWithoutStudy(const std::string& config_json) {
  nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return config_json;
  config.erase("study");
  return config.dump();
}

absl::StatusOr<PooledStudies> PoolStudies(StudySource& source,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::string>& metrics,
                                          bool with_times) {
  if (names.empty() || static_cast<int>(names.size()) > kMaxPooledStudies) {
    return absl::InvalidArgumentError(
        absl::StrCat("studies: name 1 to ", kMaxPooledStudies, ", got ", names.size()));
  }
  if (std::set<std::string>(names.begin(), names.end()).size() != names.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("studies: each at most once, got ", absl::StrJoin(names, ", ")));
  }
  PooledStudies out;
  // Kept cells by candidate key, with their study and (once read) config.
  struct Kept {
    std::string study;
    std::string id;
    std::string config;  // without the study; "" until read
  };
  std::map<std::string, std::vector<Kept>> kept;
  int checks = 0;
  bool checks_ran_out = false;
  std::map<std::pair<std::string, std::string>, int> counted_once;  // (later, earlier) -> cells
  std::vector<std::string> differ;
  const auto config_of = [&](const std::string& study,
                             const std::string& id) -> absl::StatusOr<std::string> {
    ++checks;
    absl::StatusOr<std::string> config = source.CellConfig(study, id);
    if (!config.ok()) return config.status();
    return ConfigWithoutStudy(*config);
  };
  for (size_t s = 0; s < names.size(); ++s) {
    const std::string& name = names[s];
    absl::StatusOr<v1::GetStudyResponse> study = source.GridCells(name);
    if (!study.ok()) return study.status();
    CurveTimes times;
    absl::StatusOr<Curves> curves =
        source.StudyCurves(name, metrics, with_times ? &times : nullptr);
    if (!curves.ok()) return curves.status();
    if (s == 0) *out.study.mutable_study() = study->study();
    for (v1::Cell& cell : *study->mutable_cells()) {
      if (cell.study().empty()) cell.set_study(name);
      const std::string key = CandidateKey(cell);
      std::vector<Kept>& same = kept[key];
      bool duplicate = false;
      if (!same.empty() && s > 0) {
        if (checks + 1 + static_cast<int>(same.size()) > kMaxConfigChecks) {
          checks_ran_out = true;
        } else {
          absl::StatusOr<std::string> mine = config_of(name, cell.id());
          if (!mine.ok()) return mine.status();
          for (Kept& k : same) {
            if (k.study == name) continue;
            if (k.config.empty()) {
              absl::StatusOr<std::string> theirs = config_of(k.study, k.id);
              if (!theirs.ok()) return theirs.status();
              k.config = *theirs;
            }
            if (k.config != *mine) continue;
            duplicate = true;
            ++counted_once[{name, k.study}];
            for (const std::string& metric : ComparedMetrics(metrics, out.curves, k.id)) {
              const std::optional<double> a = FinalOf(out.curves, k.id, metric);
              const std::optional<double> b = FinalOf(*curves, cell.id(), metric);
              if (a && b && Differ(*a, *b)) {
                differ.push_back(absl::StrCat("cell ", cell.id(), " of ", name, " (",
                                              metrics.empty() ? metric + " " : "", *b, ") and ",
                                              k.id, " of ", k.study, " (", *a, ")"));
                break;
              }
            }
            break;
          }
        }
      }
      if (duplicate) continue;
      same.push_back({name, cell.id(), ""});
      if (auto c = curves->find(cell.id()); c != curves->end()) {
        out.curves[cell.id()] = std::move(c->second);
      }
      if (auto t = times.find(cell.id()); t != times.end()) {
        out.times[cell.id()] = std::move(t->second);
      }
      *out.study.add_cells() = std::move(cell);
    }
  }
  for (const auto& [pair, n] : counted_once) {
    out.notes.push_back(absl::StrCat(
        n, " cell(s) of ", pair.first, " are the same experiment as cells of ", pair.second,
        " (configs equal but for the study) and count once: ", pair.second, "'s are used"));
  }
  if (!differ.empty()) {
    out.notes.push_back(absl::StrCat(
        "warning: the same experiment gave different final ",
        metrics.empty() ? std::string("values") : metrics.front(), " in ", differ.size(),
        " case(s) (nondeterminism, or another build): ",
        absl::StrJoin(differ.begin(), differ.begin() + std::min<size_t>(differ.size(), 5), "; "),
        differ.size() > 5 ? "; ..." : ""));
  }
  if (checks_ran_out) {
    out.notes.push_back(absl::StrCat("more than ", kMaxConfigChecks,
                                     " candidate duplicates: the rest were taken as distinct"));
  }
  return out;
}

}  // namespace onset::analysis
