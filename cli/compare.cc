#include "cli/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/render.h"

namespace onset::cli {
namespace {

std::string Number(double v) {
  if (!std::isfinite(v)) return "-";
  return FormatValue(v);
}

std::string DescribeSpeedUp(const CompareRow& row) {
  if (!row.has_baseline) return "-";
  char buf[32];
  switch (row.speed_up.kind) {
    case analysis::SpeedUp::kExact:
      std::snprintf(buf, sizeof buf, "%.2fx", row.speed_up.value);
      return buf;
    case analysis::SpeedUp::kAtLeast:
      std::snprintf(buf, sizeof buf, ">= %.2fx", row.speed_up.value);
      return buf;
    case analysis::SpeedUp::kAtMost:
      std::snprintf(buf, sizeof buf, "<= %.2fx", row.speed_up.value);
      return buf;
    case analysis::SpeedUp::kUnknown:
      return "?";
  }
  return "-";
}

}  // namespace

std::string FormatCrossing(const analysis::Crossing& c) {
  const std::string tokens = FormatTokens(static_cast<int64_t>(std::llround(c.tokens)));
  return c.crossed ? tokens : "> " + tokens;
}

std::vector<std::string> GroupHeaders(const CompareTable& table) {
  std::vector<std::string> headers;
  for (const std::string& a : table.by) {
    std::string h = a;
    std::transform(h.begin(), h.end(), h.begin(), ::toupper);
    headers.push_back(h);
  }
  return headers;
}

std::string RenderCompare(const CompareTable& table, const CompareSpec& spec) {
  std::vector<std::string> headers = GroupHeaders(table);
  const size_t first = headers.size();
  const std::string t = "T(" + FormatValue(spec.threshold) + ")";
  for (const std::string& h : {std::string("N"), t, std::string("MIN-MAX"), std::string("FINAL"),
                               std::string("MEAN/LOG-T"), std::string("SPEED-UP")}) {
    headers.push_back(h);
  }
  Table out(headers);
  for (size_t c = first; c < headers.size(); ++c) out.AlignRight(c);
  for (const CompareRow& row : table.rows) {
    std::vector<std::string> cells;
    for (const std::string& a : table.by) cells.push_back(row.axes.at(a));
    const analysis::GroupSummary& s = row.summary;
    cells.push_back(s.censored > 0 ? absl::StrCat(s.n, " (", s.censored, " >)")
                                   : std::to_string(s.n));
    cells.push_back(FormatCrossing(s.median));
    cells.push_back(FormatCrossing(s.min) + " - " + FormatCrossing(s.max));
    cells.push_back(s.final_median ? Number(*s.final_median) : "-");
    cells.push_back(s.mean_log_median ? Number(*s.mean_log_median) : "-");
    cells.push_back(DescribeSpeedUp(row));
    out.AddRow(std::move(cells));
  }
  std::string text = absl::StrCat(
      spec.metric,
      spec.direction == analysis::Direction::kUp ? " >= " : " <= ", FormatValue(spec.threshold),
      ": tokens to threshold, median over each group's cells (\"> X\": not "
      "reached within X tokens)");
  if (!spec.baseline.first.empty()) {
    absl::StrAppend(&text, "; speed-up against ", spec.baseline.first, "=", spec.baseline.second);
  }
  text += "\n" + out.Render();
  if (table.cells_without_points > 0) {
    absl::StrAppend(&text, table.cells_without_points, " cells have no ", spec.metric,
                    " point yet and are left out\n");
  }
  return text;
}

}  // namespace onset::cli
