#include "cli/analysis_commands.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "absl/strings/str_split.h"
#include "analysis/compare_params.h"
#include "analysis/power_law.h"
#include "cli/commands.h"
#include "cli/compare.h"
#include "cli/exit_codes.h"
#include "cli/heads.h"
#include "cli/plot.h"
#include "cli/render.h"
#include "cli/trunk_view.h"

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

// The step compare, plot and fit share: the study and its curves of spec.metric, grouped. On
// failure prints the reason and returns the exit code.
struct Grouped {
  v1::GetStudyResponse study;
  Curves curves;
  CompareTable table;
};
std::optional<int> FetchAndGroup(StudyClient& client, const std::string& study_name,
                                 const CompareSpec& spec, std::ostream& err, Grouped* out) {
  absl::StatusOr<v1::GetStudyResponse> study = client.Get(study_name);
  if (!study.ok()) return ReportError(study.status(), err);
  RemoveTrunks(&*study);
  std::vector<std::string> metrics = {spec.metric};
  for (const std::string& control : analysis::ControlMetrics(spec.metric)) {
    metrics.push_back(control);
  }
  absl::StatusOr<Curves> curves = client.Metrics(study_name, metrics);
  if (!curves.ok()) return ReportError(curves.status(), err);
  std::string error;
  out->table = Compare(*study, *curves, spec, &error);
  if (!error.empty()) {
    err << error << "\n";
    return kExitBadInput;
  }
  if (out->table.rows.empty() && out->table.cells_without_flops > 0) {
    err << "no cell of study " << study_name << " has a FLOPs count (the coordinator is older "
        << "than --x flops); use --x tokens\n";
    return kExitFailure;
  }
  if (out->table.rows.empty()) {
    err << "no cell of study " << study_name << " has reported " << spec.metric
        << " yet (onset export " << study_name << " lists the metrics there are)\n";
    return kExitFailure;
  }
  out->study = *std::move(study);
  out->curves = *std::move(curves);
  return std::nullopt;
}

// The spec of a command's comparison flags; nullopt (and the message, as a flag's) when one is
// bad.
std::optional<CompareSpec> ParseSpec(const analysis::CompareParams& params, bool threshold_required,
                                     std::ostream& err) {
  absl::StatusOr<CompareSpec> spec = analysis::ParseCompareParams(params, threshold_required);
  if (spec.ok()) return *spec;
  err << "--" << spec.status().message() << "\n";
  return std::nullopt;
}

}  // namespace

int CompareCommand(StudyClient& client, const CompareOptions& options, std::ostream& out,
                   std::ostream& err) {
  const std::optional<CompareSpec> parsed =
      ParseSpec({options.metric, options.threshold, options.direction, options.x, options.by,
                 options.baseline},
                /*threshold_required=*/true, err);
  if (!parsed) return kExitBadInput;
  const CompareSpec& spec = *parsed;
  Grouped g;
  if (std::optional<int> failed = FetchAndGroup(client, options.study, spec, err, &g)) {
    return *failed;
  }
  out << (options.json ? CompareJson(g.table, spec) : RenderCompare(g.table, spec));
  return kExitOk;
}

int PlotCommand(StudyClient& client, const PlotCommandOptions& options, std::ostream& out,
                std::ostream& err) {
  if (options.emergence && options.threshold.empty()) {
    err << "--emergence needs --threshold: the fraction of cells past which value\n";
    return kExitBadInput;
  }
  const std::optional<CompareSpec> parsed =
      ParseSpec({options.metric, options.threshold, options.direction, options.x, options.by, ""},
                /*threshold_required=*/false, err);
  if (!parsed) return kExitBadInput;
  const CompareSpec& spec = *parsed;
  Grouped g;
  if (std::optional<int> failed = FetchAndGroup(client, options.study, spec, err, &g)) {
    return *failed;
  }
  const CompareTable& table = g.table;
  const Curves* curves = &g.curves;
  PlotOptions plot;
  plot.threshold = !options.threshold.empty();
  plot.emergence = options.emergence;
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

int FitCommand(StudyClient& client, const FitOptions& options, std::ostream& out,
               std::ostream& err) {
  const std::optional<CompareSpec> spec =
      ParseSpec({options.metric, "", "auto", "tokens", options.by, ""},
                /*threshold_required=*/false, err);
  if (!spec) return kExitBadInput;
  Grouped g;
  if (std::optional<int> failed = FetchAndGroup(client, options.study, *spec, err, &g)) {
    return *failed;
  }
  const CompareTable& table = g.table;
  const Curves* curves = &g.curves;
  std::vector<std::string> headers = GroupHeaders(table);
  const size_t first = headers.size();
  for (const char* h : {"CELLS", "POINTS", "E", "B", "BETA", "D0", "RMSE"}) headers.push_back(h);
  Table text(headers);
  for (size_t c = first; c < headers.size(); ++c) text.AlignRight(c);
  nlohmann::json groups = nlohmann::json::array();
  auto pm = [](double v, double se) {
    return std::isnan(se) ? FormatValue(v) : FormatValue(v) + " +- " + FormatValue(se);
  };
  for (const CompareRow& row : table.rows) {
    std::vector<analysis::Point> points;
    for (const std::string& id : row.cell_ids) {
      for (const auto& [t, v] : curves->at(id).at(options.metric)) points.push_back({t, v});
    }
    std::string problem;
    const std::optional<analysis::PowerLawFit> fit =
        analysis::FitPowerLaw(points, options.min_tokens, &problem);
    std::vector<std::string> cells;
    for (const std::string& a : table.by) cells.push_back(row.axes.at(a));
    cells.push_back(std::to_string(row.cell_ids.size()));
    nlohmann::json g = {{"axes", row.axes}, {"cells", row.cell_ids}};
    if (fit) {
      for (const std::string& v :
           {std::to_string(fit->points), pm(fit->E, fit->E_se), pm(fit->B, fit->B_se),
            pm(fit->beta, fit->beta_se), FormatTokens(static_cast<int64_t>(fit->D0)),
            FormatValue(fit->rmse)}) {
        cells.push_back(v);
      }
      auto num = [](double v) {
        return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
      };
      g["fit"] = {{"E", fit->E},          {"E_se", num(fit->E_se)},
                  {"B", fit->B},          {"B_se", num(fit->B_se)},
                  {"beta", fit->beta},    {"beta_se", num(fit->beta_se)},
                  {"D0", fit->D0},        {"rmse", fit->rmse},
                  {"points", fit->points}};
    } else {
      cells.push_back(std::to_string(points.size()));
      cells.push_back("no fit: " + problem);
      g["fit"] = nullptr;
      g["problem"] = problem;
    }
    text.AddRow(std::move(cells));
    groups.push_back(g);
  }
  if (options.json) {
    out << nlohmann::json({{"metric", options.metric},
                           {"model", "L(D) = E + B * (D / D0)^-beta"},
                           {"min_tokens", options.min_tokens},
                           {"groups", groups}})
               .dump(2)
        << "\n";
  } else {
    out << options.metric << " = E + B (D / D0)^-beta, least squares per group (+- one standard "
        << "error)\n"
        << text.Render();
  }
  return kExitOk;
}

int HeadsCommand(StudyClient& client, const std::string& study, const std::string& cell,
                 int64_t at_tokens, bool json, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Curves> curves = client.Metrics(study, {}, {cell});
  if (!curves.ok()) return ReportError(curves.status(), err);
  const auto it = curves->find(cell);
  const HeadMap map =
      BuildHeadMap(it == curves->end() ? Curves::mapped_type{} : it->second, at_tokens);
  if (!json) {
    out << RenderHeadMap(map);
    return kExitOk;
  }
  nlohmann::json j = nlohmann::json::parse(analysis::HeadMapJson(map));
  j["study"] = study;
  j["cell_id"] = cell;
  out << j.dump(2) << "\n";
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
  RemoveTrunks(&*study);
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
          nlohmann::json row = {
              {"study", options.study}, {"cell_id", cell.id()}, {"state", StateName(cell.state())},
              {"axes", cell.axes()},    {"metric", metric},     {"tokens", tokens}};
          row["value"] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
          out << row.dump() << "\n";
        }
      }
    }
  }
  return kExitOk;
}

}  // namespace onset::cli
