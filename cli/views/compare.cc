#include "cli/views/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/metric_names.h"
#include "cli/views/render.h"

namespace onset::cli {
namespace {

// "95%" for 0.95, "99.9%" for 0.999.
std::string Percent(double level) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", level * 100);
  return buf;
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "-";
  return FormatValue(v);
}

std::string DescribeSpeedUp(const analysis::SpeedUp& s) {
  char buf[32];
  switch (s.kind) {
    case analysis::SpeedUp::kExact:
      std::snprintf(buf, sizeof buf, "%.2fx", s.value);
      return buf;
    case analysis::SpeedUp::kAtLeast:
      std::snprintf(buf, sizeof buf, ">= %.2fx", s.value);
      return buf;
    case analysis::SpeedUp::kAtMost:
      std::snprintf(buf, sizeof buf, "<= %.2fx", s.value);
      return buf;
    case analysis::SpeedUp::kUnknown:
      return "?";
  }
  return "-";
}

// "1.60x [0.90x, 2.80x]": a speed-up with its interval, or alone when the interval is unknown.
std::string DescribeSpeedUpWithInterval(const analysis::SpeedUp& s,
                                        const analysis::SpeedUpInterval& i) {
  if (i.lower.kind == analysis::SpeedUp::kUnknown && i.upper.kind == analysis::SpeedUp::kUnknown) {
    return DescribeSpeedUp(s) + " [?]";
  }
  return DescribeSpeedUp(s) + " [" + DescribeSpeedUp(i.lower) + ", " + DescribeSpeedUp(i.upper) +
         "]";
}

// Whether the interval may hold 1x: its lower end at or below 1 (or unknown) and its upper end
// at or above 1 (or unknown); an end that is a bound counts as reaching as far as it may.
bool IntervalHoldsOne(const analysis::SpeedUpInterval& i) {
  const auto may_be_at_most_one = [](const analysis::SpeedUp& s) {
    return s.kind == analysis::SpeedUp::kUnknown || s.kind == analysis::SpeedUp::kAtMost ||
           s.value <= 1;
  };
  const auto may_be_at_least_one = [](const analysis::SpeedUp& s) {
    return s.kind == analysis::SpeedUp::kUnknown || s.kind == analysis::SpeedUp::kAtLeast ||
           s.value >= 1;
  };
  return may_be_at_most_one(i.lower) && may_be_at_least_one(i.upper);
}

// "0.81 +-0.05": the mean and standard deviation over the cells ("-" when none).
std::string DescribeSpread(const std::optional<analysis::Spread>& s) {
  if (!s) return "-";
  if (s->n < 2) return Number(s->mean);
  return Number(s->mean) + " +-" + Number(s->sd);
}

// "p=0.031", "p<0.001", "-" when undefined.
std::string DescribeP(const analysis::LogRank& t) {
  if (!t.defined) return "-";
  if (t.p_value < 0.001) return "p<0.001";
  char buf[32];
  std::snprintf(buf, sizeof buf, "p=%.3f", t.p_value);
  return buf;
}

// (declared in compare.h)
std::string RenderChoicesImpl(const CompareTable& table, const CompareSpec& spec) {
  const analysis::BestOverSpec& b = spec.best_over;
  std::string rule;
  switch (b.rule) {
    case analysis::BestOverSpec::Rule::kMin:
      rule = "the lowest mean final " + b.metric;
      break;
    case analysis::BestOverSpec::Rule::kMax:
      rule = "the highest mean final " + b.metric;
      break;
    case analysis::BestOverSpec::Rule::kCrossing:
      rule = "the earliest median crossing of " + b.metric + " at " + FormatValue(spec.threshold);
      break;
  }
  std::string text = absl::StrCat("\n", b.axis, " chosen per group by ", rule);
  if (b.selection_seeds.empty()) {
    text += " (chosen and compared on the same cells)";
  } else {
    absl::StrAppend(&text, ", chosen on seeds ", absl::StrJoin(b.selection_seeds, ","),
                    " and compared on the others");
  }
  text += ":\n";
  for (const analysis::BestOverChoice& c : table.choices) {
    std::vector<std::string> axes, scores;
    for (const auto& [a, v] : c.group) axes.push_back(a + "=" + v);
    for (const auto& [value, score] : c.scores) {
      const auto median = c.medians.find(value);
      scores.push_back(value + ": " +
                       (median != c.medians.end() ? FormatCrossing(median->second)
                        : score                   ? Number(*score)
                                                  : "-"));
    }
    absl::StrAppend(&text, "  ", axes.empty() ? "all" : absl::StrJoin(axes, " "), ": ", b.axis, "=",
                    c.chosen.empty() ? "none (no value reported " + b.metric + ")" : c.chosen, " (",
                    absl::StrJoin(scores, ", "), ")\n");
  }
  return text;
}

// At most `n` of `points`, spread evenly over their indices (the first and the last kept).
std::vector<int64_t> Spread(const std::vector<int64_t>& points, size_t n) {
  if (points.size() <= n || n < 2) return points;
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(points[static_cast<size_t>(
        std::llround(static_cast<double>(i) * (points.size() - 1) / (n - 1)))]);
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
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

std::string RenderBestOverChoices(const CompareTable& table, const CompareSpec& spec) {
  return spec.best_over.axis.empty() ? std::string() : RenderChoicesImpl(table, spec);
}

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
  return CapitalHeaders(table.by);
}

std::string RenderCompare(const CompareTable& table, const CompareSpec& spec) {
  const bool control = !table.control_metric.empty();
  const bool key_swap = metric::IsKeySwap(table.control_metric);
  const bool baseline = !spec.baseline.first.empty();
  const bool sized = std::any_of(table.rows.begin(), table.rows.end(),
                                 [](const CompareRow& r) { return r.params.has_value(); });
  const std::string x = spec.x == XAxis::kFlops ? "FLOPS" : "T";
  std::vector<std::string> headers = GroupHeaders(table);
  const size_t first = headers.size();
  for (const std::string& h :
       {std::string("N"), std::string("CROSSED"), x + "(" + FormatValue(spec.threshold) + ")",
        std::string("MIN-MAX"), std::string("FINAL")}) {
    headers.push_back(h);
  }
  if (control) headers.push_back(key_swap ? "KEY-SWAP" : "COPY-RATE");
  headers.push_back("MEAN/LOG-T");
  if (sized) Append(&headers, {"PARAMS", "FLOPS/TOK"});
  // Several studies pooled: where each group's cells come from.
  std::set<std::string> studies;
  for (const CompareRow& row : table.rows) {
    for (const auto& [study, n] : row.studies) studies.insert(study);
  }
  const bool pooled = studies.size() > 1;
  if (pooled) headers.push_back("STUDIES");
  if (baseline) Append(&headers, {"SPEED-UP", "SEED-WISE", "LOG-RANK"});
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
    cells.push_back(absl::StrCat(row.emergence.crossed, "/", row.emergence.n));
    const analysis::MedianInterval& mi = row.median_interval;
    cells.push_back(FormatCrossing(row.emergence.median, spec.x) + " [" +
                    FormatCrossing(mi.lower, spec.x) + ", " + FormatCrossing(mi.upper, spec.x) +
                    "]");
    cells.push_back(FormatCrossing(s.min, spec.x) + " - " + FormatCrossing(s.max, spec.x));
    cells.push_back(DescribeSpread(row.final_spread));
    if (control) cells.push_back(row.control_median ? Number(*row.control_median) : "-");
    cells.push_back(DescribeSpread(row.mean_log_spread));
    if (sized) {
      cells.push_back(DescribeRange(row.params));
      cells.push_back(DescribeRange(row.flops_per_token));
    }
    if (pooled) {
      std::vector<std::string> from;
      for (const auto& [study, n] : row.studies) from.push_back(absl::StrCat(study, ":", n));
      cells.push_back(absl::StrJoin(from, ","));
    }
    if (baseline) {
      const bool own = row.has_baseline && &table.rows[row.baseline_row] == &row;
      cells.push_back(!row.has_baseline ? "-"
                      : own             ? DescribeSpeedUp(row.speed_up)
                            : DescribeSpeedUpWithInterval(row.speed_up, row.speed_up_interval));
      cells.push_back(row.has_baseline ? DescribeSpeedUp(row.seedwise) : "-");
      cells.push_back(row.has_baseline && !own ? DescribeP(row.logrank) : "-");
    }
    out.AddRow(std::move(cells));
  }
  std::string text = absl::StrCat(
      spec.metric,
      spec.direction == analysis::Direction::kUp ? " >= " : " <= ", FormatValue(spec.threshold),
      spec.x == XAxis::kFlops ? ": training FLOPs to threshold" : ": tokens to threshold",
      " over each group's cells (CROSSED: how many reached it; the median is Kaplan-Meier's "
      "with its ",
      Percent(spec.level),
      " interval in brackets (Brookmeyer-Crowley), \"<= X\": reached by the first eval point, "
      "at X; \"> X\": not reached within X, more seeds or tokens would tell); FINAL and "
      "MEAN/LOG-T: mean +-sd over the cells");
  if (baseline) {
    absl::StrAppend(&text, "; speed-up against ", spec.baseline.first, "=", spec.baseline.second,
                    " (SPEED-UP: of the medians, with its ", Percent(spec.level),
                    " percentile-bootstrap interval over the seeds (", spec.bootstrap_resamples,
                    " resamples, seed ", spec.bootstrap_seed,
                    "); SEED-WISE: the baseline's fastest cell over the group's slowest, >= 1x "
                    "when every cell of the group was faster; LOG-RANK: the p-value of the "
                    "log-rank test of the group's emergence against the baseline's)");
  }
  if (control) {
    absl::StrAppend(&text, "; ", key_swap ? "KEY-SWAP" : "COPY-RATE", ": final ",
                    table.control_metric);
  }
  text += "\n" + out.Render();
  if (!spec.best_over.axis.empty()) text += RenderChoicesImpl(table, spec);
  // Where the data cannot tell the group from its baseline, say so in words.
  if (baseline) {
    for (const CompareRow& row : table.rows) {
      if (!row.has_baseline || &table.rows[row.baseline_row] == &row) continue;
      if (!IntervalHoldsOne(row.speed_up_interval)) continue;
      std::vector<std::string> axes;
      for (const std::string& a : table.by) axes.push_back(a + "=" + row.axes.at(a));
      absl::StrAppend(&text, absl::StrJoin(axes, " "), ": the speed-up's ", Percent(spec.level),
                      " interval includes 1x: these seeds cannot tell it from the baseline\n");
    }
  }
  // How many cells of each group had crossed by each eval point.
  if (!table.eval_points.empty()) {
    const std::vector<int64_t> points = Spread(table.eval_points, 10);
    std::vector<std::string> by = GroupHeaders(table);
    for (int64_t t : points) by.push_back(FormatTokens(t));
    Table crossed(by);
    for (size_t c = table.by.size(); c < by.size(); ++c) crossed.AlignRight(c);
    for (const CompareRow& row : table.rows) {
      std::vector<std::string> cells;
      for (const std::string& a : table.by) cells.push_back(row.axes.at(a));
      std::vector<analysis::Crossing> crossings;
      for (const analysis::CellSummary& c : row.cells) crossings.push_back(c.crossing);
      for (int64_t t : points) {
        const analysis::CrossedBy c = analysis::CountCrossedBy(crossings, static_cast<double>(t));
        cells.push_back(c.observed > 0 ? absl::StrCat(c.crossed, "/", c.observed) : "-");
      }
      crossed.AddRow(std::move(cells));
    }
    absl::StrAppend(&text, "\ncells past ", FormatValue(spec.threshold),
                    " by tokens seen (crossed/", "observed):\n", crossed.Render());
  }
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
