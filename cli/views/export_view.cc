#include "cli/views/export_view.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "proto/cell_names.h"

namespace onset::cli {
namespace {

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

void WriteExport(const std::string& study_name, const v1::GetStudyResponse& study,
                 const analysis::Curves& curves, ExportFormat format, std::ostream& out) {
  std::set<std::string> axis_set;
  for (const v1::Cell& c : study.cells()) {
    for (const auto& [k, v] : c.axes()) axis_set.insert(k);
  }
  const std::vector<std::string> axes(axis_set.begin(), axis_set.end());
  const bool csv = format == ExportFormat::kCsv;
  if (csv) {
    out << "study,cell_id,state";
    for (const std::string& a : axes) out << "," << CsvField("axis." + a);
    out << ",metric,tokens,value\n";
  }
  for (const v1::Cell& cell : study.cells()) {
    auto c = curves.find(cell.id());
    if (c == curves.end()) continue;
    const std::string state(wire::StateName(cell.state()));
    for (const auto& [metric, points] : c->second) {
      for (const auto& [tokens, value] : points) {
        if (csv) {
          out << CsvField(study_name) << "," << cell.id() << "," << state;
          for (const std::string& a : axes) {
            auto it = cell.axes().find(a);
            out << "," << (it == cell.axes().end() ? "" : CsvField(it->second));
          }
          out << "," << CsvField(metric) << "," << tokens << "," << CsvNumber(value) << "\n";
        } else {
          nlohmann::json row = {{"study", study_name}, {"cell_id", cell.id()}, {"state", state},
                                {"axes", cell.axes()}, {"metric", metric},     {"tokens", tokens}};
          row["value"] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
          out << row.dump() << "\n";
        }
      }
    }
  }
}

}  // namespace onset::cli
