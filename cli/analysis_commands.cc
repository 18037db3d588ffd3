#include "cli/analysis_commands.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/compare.h"
#include "cli/exit_codes.h"
#include "cli/plot.h"
#include "cli/render.h"

namespace onset::cli {
namespace {

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(part);
  }
  return out;
}

// RFC 4180: quoted when it holds a comma, a quote or a line break; quotes doubled.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string CsvNumber(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

int CompareCommand(StudyClient& client, const CompareOptions& options, std::ostream& out,
                   std::ostream& err) {
  CompareSpec spec;
  spec.metric = options.metric;
  spec.threshold = options.threshold;
  if (options.direction == "auto") {
    spec.direction = analysis::DefaultDirection(options.metric);
  } else if (options.direction == "up" || options.direction == "down") {
    spec.direction = options.direction == "up" ? analysis::Direction::kUp : analysis::Direction::kDown;
  } else {
    err << "--direction: must be auto, up or down, got '" << options.direction << "'\n";
    return kExitBadInput;
  }
  spec.by = SplitList(options.by);
  if (!options.baseline.empty()) {
    const size_t eq = options.baseline.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == options.baseline.size()) {
      err << "--baseline: must be AXIS=VALUE, e.g. arch=full, got '" << options.baseline << "'\n";
      return kExitBadInput;
    }
    spec.baseline = {options.baseline.substr(0, eq), options.baseline.substr(eq + 1)};
  }
  absl::StatusOr<v1::GetStudyResponse> study = client.Get(options.study);
  if (!study.ok()) return ReportError(study.status(), err);
  absl::StatusOr<Curves> curves = client.Metrics(options.study, {options.metric});
  if (!curves.ok()) return ReportError(curves.status(), err);
  std::string error;
  CompareTable table = Compare(*study, *curves, spec, &error);
  if (!error.empty()) {
    err << error << "\n";
    return kExitBadInput;
  }
  if (table.rows.empty()) {
    err << "no cell of study " << options.study << " has reported " << options.metric
        << " yet (metric names: onset export " << options.study << " | cut -d, -f...)\n";
    return kExitFailure;
  }
  out << (options.json ? CompareJson(table, spec) : RenderCompare(table, spec));
  return kExitOk;
}

int PlotCommand(StudyClient& client, const PlotCommandOptions& options, std::ostream& out,
                std::ostream& err) {
  CompareSpec spec;
  spec.metric = options.metric;
  spec.threshold = options.threshold.value_or(0);
  if (options.direction != "auto" && options.direction != "up" && options.direction != "down") {
    err << "--direction: must be auto, up or down, got '" << options.direction << "'\n";
    return kExitBadInput;
  }
  spec.direction = options.direction == "auto" ? analysis::DefaultDirection(options.metric)
                   : options.direction == "up" ? analysis::Direction::kUp
                                               : analysis::Direction::kDown;
  spec.by = SplitList(options.by);
  absl::StatusOr<v1::GetStudyResponse> study = client.Get(options.study);
  if (!study.ok()) return ReportError(study.status(), err);
  absl::StatusOr<Curves> curves = client.Metrics(options.study, {options.metric});
  if (!curves.ok()) return ReportError(curves.status(), err);
  std::string error;
  CompareTable table = Compare(*study, *curves, spec, &error);
  if (!error.empty()) {
    err << error << "\n";
    return kExitBadInput;
  }
  if (table.rows.empty()) {
    err << "no cell of study " << options.study << " has reported " << options.metric << " yet\n";
    return kExitFailure;
  }
  PlotOptions plot;
  plot.threshold = options.threshold.has_value();
  plot.title = options.title.empty() ? options.study + ": " + options.metric : options.title;
  const std::string svg = RenderSvg(table, *curves, spec, plot);
  if (options.out == "-") {
    out << svg;
    return kExitOk;
  }
  std::ofstream file(options.out, std::ios::binary | std::ios::trunc);
  file << svg;
  file.close();
  if (!file) {
    err << "--out: cannot write " << options.out << "\n";
    return kExitFailure;
  }
  err << "wrote " << options.out << ": " << table.rows.size() << " groups of " << options.metric
      << "\n";
  return kExitOk;
}

int ExportCommand(StudyClient& client, const ExportOptions& options, std::ostream& out,
                  std::ostream& err) {
  if (options.format != "csv" && options.format != "jsonl") {
    err << "--format: must be csv or jsonl, got '" << options.format << "'\n";
    return kExitBadInput;
  }
  absl::StatusOr<v1::GetStudyResponse> study = client.Get(options.study);
  if (!study.ok()) return ReportError(study.status(), err);
  absl::StatusOr<Curves> curves = client.Metrics(options.study, SplitList(options.metrics));
  if (!curves.ok()) return ReportError(curves.status(), err);
  std::set<std::string> axis_set;
  for (const v1::Cell& c : study->cells()) {
    for (const auto& [k, v] : c.axes()) axis_set.insert(k);
  }
  const std::vector<std::string> axes(axis_set.begin(), axis_set.end());
  if (options.format == "csv") {
    out << "study,cell_id,state";
    // Axes as "axis.NAME": the tokens axis (the budget) must not be taken for a point's tokens.
    for (const std::string& a : axes) out << "," << CsvField("axis." + a);
    out << ",metric,tokens,value\n";
  }
  for (const v1::Cell& cell : study->cells()) {
    auto c = curves->find(cell.id());
    if (c == curves->end()) continue;
    for (const auto& [metric, points] : c->second) {
      for (const auto& [tokens, value] : points) {
        if (options.format == "csv") {
          out << CsvField(options.study) << "," << cell.id() << "," << StateName(cell.state());
          for (const std::string& a : axes) {
            auto it = cell.axes().find(a);
            out << "," << (it == cell.axes().end() ? "" : CsvField(it->second));
          }
          out << "," << CsvField(metric) << "," << tokens << "," << CsvNumber(value) << "\n";
        } else {
          nlohmann::json row = {{"study", options.study},
                                {"cell_id", cell.id()},
                                {"state", StateName(cell.state())},
                                {"axes", cell.axes()},
                                {"metric", metric},
                                {"tokens", tokens}};
          row["value"] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
          out << row.dump() << "\n";
        }
      }
    }
  }
  return kExitOk;
}

}  // namespace onset::cli
