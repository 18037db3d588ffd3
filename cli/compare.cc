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

// "1.2M" for one value, "800K-1.2M" when the group's cells differ, "-" when unknown.
std::string DescribeRange(const std::optional<analysis::Range>& r) {
  if (!r) return "-";
  const std::string lo = FormatTokens(static_cast<int64_t>(std::llround(r->min)));
  const std::string hi = FormatTokens(static_cast<int64_t>(std::llround(r->max)));
  return lo == hi ? lo : lo + "-" + hi;
}

void Append(std::vector<std::string>* to, const std::vector<std::string>& more) {
  to->insert(to->end(), more.begin(), more.end());
}

}  // namespace

std::string FormatX(double at, XAxis x) {
  return x == XAxis::kFlops ? FormatFlops(at)
                            : FormatTokens(static_cast<int64_t>(std::llround(at)));
}

std::string FormatCrossing(const analysis::Crossing& c, XAxis x) {
  switch (c.kind) {
    case analysis::Crossing::kExact:
      return FormatX(c.at, x);
    case analysis::Crossing::kLeft:
      return "<= " + FormatX(c.at, x);
    case analysis::Crossing::kRight:
      return "> " + FormatX(c.at, x);
    case analysis::Crossing::kUnknown:
      break;
  }
  return "?";
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
  const bool copy = !table.copy_rate_metric.empty();
  const bool sized = std::any_of(table.rows.begin(), table.rows.end(),
                                 [](const CompareRow& r) { return r.params.has_value(); });
  const std::string x = spec.x == XAxis::kFlops ? "FLOPS" : "T";
  std::vector<std::string> headers = GroupHeaders(table);
  const size_t first = headers.size();
  for (const std::string& h : {std::string("N"), x + "(" + FormatValue(spec.threshold) + ")",
                               std::string("MIN-MAX"), std::string("FINAL")}) {
    headers.push_back(h);
  }
  if (copy) headers.push_back("COPY-RATE");
  headers.push_back("MEAN/LOG-T");
  if (sized) Append(&headers, {"PARAMS", "FLOPS/TOK"});
  headers.push_back("SPEED-UP");
  Table out(headers);
  for (size_t c = first; c < headers.size(); ++c) out.AlignRight(c);
  for (const CompareRow& row : table.rows) {
    std::vector<std::string> cells;
    for (const std::string& a : table.by) cells.push_back(row.axes.at(a));
    const analysis::GroupSummary& s = row.summary;
    std::vector<std::string> censored;
    if (s.left_censored > 0) censored.push_back(absl::StrCat(s.left_censored, " <="));
    if (s.censored > 0) censored.push_back(absl::StrCat(s.censored, " >"));
    cells.push_back(censored.empty() ? std::to_string(s.n)
                                     : absl::StrCat(s.n, " (", absl::StrJoin(censored, ", "), ")"));
    cells.push_back(FormatCrossing(s.median, spec.x));
    cells.push_back(FormatCrossing(s.min, spec.x) + " - " + FormatCrossing(s.max, spec.x));
    cells.push_back(s.final_median ? Number(*s.final_median) : "-");
    if (copy) cells.push_back(row.copy_rate_median ? Number(*row.copy_rate_median) : "-");
    cells.push_back(s.mean_log_median ? Number(*s.mean_log_median) : "-");
    if (sized) {
      cells.push_back(DescribeRange(row.params));
      cells.push_back(DescribeRange(row.flops_per_token));
    }
    cells.push_back(DescribeSpeedUp(row));
    out.AddRow(std::move(cells));
  }
  std::string text = absl::StrCat(
      spec.metric,
      spec.direction == analysis::Direction::kUp ? " >= " : " <= ", FormatValue(spec.threshold),
      spec.x == XAxis::kFlops ? ": training FLOPs to threshold" : ": tokens to threshold",
      ", median over each group's cells (\"<= X\": reached by the first eval point, at X; "
      "\"> X\": not reached within X)");
  if (!spec.baseline.first.empty()) {
    absl::StrAppend(&text, "; speed-up against ", spec.baseline.first, "=", spec.baseline.second);
  }
  if (copy) absl::StrAppend(&text, "; COPY-RATE: final ", table.copy_rate_metric);
  text += "\n" + out.Render();
  if (table.cells_without_points > 0) {
    absl::StrAppend(&text, table.cells_without_points, " cells have no ", spec.metric,
                    " point yet and are left out\n");
  }
  if (table.cells_without_flops > 0) {
    absl::StrAppend(&text, table.cells_without_flops,
                    " cells have no FLOPs per token (a coordinator too old to size them) and are "
                    "left out\n");
  }
  return text;
}

}  // namespace onset::cli
