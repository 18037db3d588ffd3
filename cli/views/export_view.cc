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

// The times of one curve, or null when there are none.
const std::vector<int64_t>* TimesOf(const analysis::CurveTimes* times, const std::string& cell,
                                    const std::string& metric) {
  if (times == nullptr) return nullptr;
  auto c = times->find(cell);
  if (c == times->end()) return nullptr;
  auto m = c->second.find(metric);
  return m == c->second.end() ? nullptr : &m->second;
}

}  // namespace

void WriteExport(const std::string& study_name, const v1::GetStudyResponse& study,
                 const analysis::Curves& curves, const analysis::CurveTimes* times,
                 ExportFormat format, std::ostream& out) {
  std::set<std::string> axis_set;
  for (const v1::Cell& c : study.cells()) {
    for (const auto& [k, v] : c.axes()) axis_set.insert(k);
  }
  const std::vector<std::string> axes(axis_set.begin(), axis_set.end());
  const bool csv = format == ExportFormat::kCsv;
  if (csv) {
    out << "study,cell_id,state";
    for (const std::string& a : axes) out << "," << CsvField("axis." + a);
    out << ",metric,tokens,value,at_unix_ms\n";
  }
  for (const v1::Cell& cell : study.cells()) {
    auto c = curves.find(cell.id());
    if (c == curves.end()) continue;
    const std::string state(wire::StateName(cell.state()));
    const std::string& cell_study = cell.study().empty() ? study_name : cell.study();
    for (const auto& [metric, points] : c->second) {
      const std::vector<int64_t>* at = TimesOf(times, cell.id(), metric);
      for (size_t i = 0; i < points.size(); ++i) {
        const auto& [tokens, value] = points[i];
        const int64_t at_unix_ms = at != nullptr && i < at->size() ? (*at)[i] : 0;
        if (csv) {
          out << CsvField(cell_study) << "," << cell.id() << "," << state;
          for (const std::string& a : axes) {
            auto it = cell.axes().find(a);
            out << "," << (it == cell.axes().end() ? "" : CsvField(it->second));
          }
          out << "," << CsvField(metric) << "," << tokens << "," << CsvNumber(value) << ",";
          if (at_unix_ms > 0) out << at_unix_ms;
          out << "\n";
        } else {
          nlohmann::json row = {{"study", cell_study}, {"cell_id", cell.id()}, {"state", state},
                                {"axes", cell.axes()}, {"metric", metric},     {"tokens", tokens}};
          row["value"] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
          row["at_unix_ms"] = at_unix_ms > 0 ? nlohmann::json(at_unix_ms) : nlohmann::json(nullptr);
          out << row.dump() << "\n";
        }
      }
    }
  }
}

}  // namespace onset::cli
