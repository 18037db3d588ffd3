#include "cli/commands/pooled_studies.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/views/trunk_view.h"

namespace onset::cli {
namespace {

// Duplicate candidates are checked by their configs, one DescribeCell each; past this many the
// rest are taken as distinct (and said so) rather than let a comparison make 100,000 calls.
constexpr int kMaxConfigChecks = 10'000;

// What must match for two cells to be candidates: their axes and budget.
std::string CandidateKey(const v1::Cell& cell) {
  std::map<std::string, std::string> axes(cell.axes().begin(), cell.axes().end());
  std::string key = std::to_string(cell.tokens_budget());
  for (const auto& [k, v] : axes) absl::StrAppend(&key, "\x1f", k, "=", v);
  return key;
}

std::optional<double> FinalOf(const StudyClient::Curves& curves, const std::string& cell,
                              const std::string& metric) {
  auto c = curves.find(cell);
  if (c == curves.end()) return std::nullopt;
  auto m = c->second.find(metric);
  if (m == c->second.end() || m->second.empty()) return std::nullopt;
  return m->second.back().second;  // points come in token order
}

}  // namespace

std::string ConfigWithoutStudy(const std::string& config_json) {
  nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return config_json;
  config.erase("study");
  return config.dump();
}

absl::StatusOr<PooledStudies> PoolStudies(StudyClient& client,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::string>& metrics) {
  PooledStudies out;
  out.study.mutable_study()->set_name(absl::StrJoin(names, "+"));
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
    absl::StatusOr<v1::DescribeCellResponse> d = client.DescribeCell(study, id);
    if (!d.ok()) return d.status();
    return ConfigWithoutStudy(d->config_json());
  };
  for (size_t s = 0; s < names.size(); ++s) {
    const std::string& name = names[s];
    absl::StatusOr<v1::GetStudyResponse> study = client.Get(name);
    if (!study.ok()) return study.status();
    RemoveTrunks(&*study);
    absl::StatusOr<StudyClient::Curves> curves = client.Metrics(name, metrics);
    if (!curves.ok()) return curves.status();
    if (s == 0) *out.study.mutable_study() = study->study();
    for (const v1::Cell& cell : study->cells()) {
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
            const std::optional<double> a = FinalOf(out.curves, k.id, metrics.front());
            const std::optional<double> b = FinalOf(*curves, cell.id(), metrics.front());
            if (a && b && std::fabs(*a - *b) > 1e-9 * std::max(1.0, std::fabs(*a))) {
              differ.push_back(absl::StrCat("cell ", cell.id(), " of ", name, " (", *b, ") and ",
                                            k.id, " of ", k.study, " (", *a, ")"));
            }
            break;
          }
        }
      }
      if (duplicate) continue;
      same.push_back({name, cell.id(), ""});
      *out.study.add_cells() = cell;
      if (auto c = curves->find(cell.id()); c != curves->end()) out.curves[cell.id()] = c->second;
    }
  }
  for (const auto& [pair, n] : counted_once) {
    out.notes.push_back(absl::StrCat(
        n, " cell(s) of ", pair.first, " are the same experiment as cells of ", pair.second,
        " (configs equal but for the study) and count once: ", pair.second, "'s are used"));
  }
  if (!differ.empty()) {
    out.notes.push_back(absl::StrCat(
        "warning: the same experiment gave different final ", metrics.front(), " in ",
        differ.size(), " case(s) (nondeterminism, or another build): ",
        absl::StrJoin(differ.begin(), differ.begin() + std::min<size_t>(differ.size(), 5), "; "),
        differ.size() > 5 ? "; ..." : ""));
  }
  if (checks_ran_out) {
    out.notes.push_back(absl::StrCat("more than ", kMaxConfigChecks,
                                     " candidate duplicates: the rest were taken as distinct"));
  }
  return out;
}

}  // namespace onset::cli
