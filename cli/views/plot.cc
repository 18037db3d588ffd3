#include "cli/views/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/views/render.h"

namespace onset::cli {
namespace {

// Okabe-Ito: distinguishable with colour-vision deficiencies, and in greyscale print.
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000", "#F0E442"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A group's curve: at each x any of its cells measured (tokens, or tokens times the cell's
// FLOPs per token), the median, min and max of the cells measured there.
struct Band {
  std::vector<double> tokens, median, lo, hi;  // tokens: the x, in either unit
};

Band GroupBand(const CompareRow& row, const Curves& curves, const CompareSpec& spec) {
  std::map<double, std::vector<double>> at;
  for (size_t i = 0; i < row.cell_ids.size(); ++i) {
    auto c = curves.find(row.cell_ids[i]);
    if (c == curves.end()) continue;
    auto m = c->second.find(spec.metric);
    if (m == c->second.end()) continue;
    const double scale =
        spec.x == analysis::XAxis::kFlops ? row.costs[i].train_flops_per_token : 1.0;
    for (const auto& [t, v] : m->second) {
      if (t > 0 && std::isfinite(v)) at[static_cast<double>(t) * scale].push_back(v);
    }
  }
  Band b;
  for (const auto& [t, values] : at) {
    b.tokens.push_back(t);
    b.median.push_back(Median(values));
    b.lo.push_back(*std::min_element(values.begin(), values.end()));
    b.hi.push_back(*std::max_element(values.begin(), values.end()));
  }
  return b;
}

// A group's Kaplan-Meier fraction emerged as a step curve over [t_lo, t_hi]: flat between
// event times, a vertical step at each; lo and hi are the pointwise band at `level`
// (analysis/median_interval.h KaplanMeierBand), the one the median's interval inverts.
Band EmergenceBand(const CompareRow& row, double t_lo, double t_hi, double level) {
  Band b;
  auto add = [&b](double t, double v, double lo, double hi) {
    b.tokens.push_back(t);
    b.median.push_back(v);
    b.lo.push_back(lo);
    b.hi.push_back(hi);
  };
  std::vector<analysis::Crossing> crossings;
  for (const analysis::CellSummary& c : row.cells) crossings.push_back(c.crossing);
  const std::vector<analysis::EmergedBand> band = analysis::KaplanMeierBand(crossings, level);
  double value = 0, lo = 0, hi = 0;
  add(t_lo, 0, 0, 0);
  for (size_t i = 0; i < row.emergence.steps.size(); ++i) {
    const analysis::EmergenceStep& s = row.emergence.steps[i];
    const double at = std::clamp(s.at, t_lo, t_hi);
    add(at, value, lo, hi);
    value = s.emerged;
    if (i < band.size()) {
      lo = band[i].low;
      hi = band[i].high;
    }
    add(at, value, lo, hi);
  }
  add(t_hi, value, lo, hi);
  return b;
}

}  // namespace

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` intervals.
double NiceStep(double span, int ticks) {
  const double raw = span / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

std::vector<std::string> Labels(const CompareTable& table) {
  // Only the axes whose value differs between groups tell them apart; one group names them all.
  std::vector<std::string> varying;
  for (const std::string& a : table.by) {
    for (const CompareRow& row : table.rows) {
      if (row.axes.at(a) != table.rows.front().axes.at(a)) {
        varying.push_back(a);
        break;
      }
    }
  }
  if (varying.empty()) varying = table.by;
  std::vector<std::string> labels;
  for (const CompareRow& row : table.rows) {
    std::vector<std::string> parts;
    for (const std::string& a : varying) parts.push_back(a + "=" + row.axes.at(a));
    labels.push_back(absl::StrJoin(parts, " "));
  }
  return labels;
}

namespace {

// The figure's geometry and the plot's scales: log10 tokens over the data's range (a small
// margin each side), the value on a nice linear range.
struct Frame {
  double left = 64, top = 36, bottom = 48, right = 200;
  double width = 0, height = 0;  // the whole figure
  double pw = 0, ph = 0;         // the plot area
  double d_lo = 0, d_hi = 1;     // log10 of the x axis's ends
  double v_min = 0, v_max = 1, step = 1;
  int y_ticks = 1;

  double X(double t) const { return left + (std::log10(t) - d_lo) / (d_hi - d_lo) * pw; }
  double Y(double v) const { return top + (v_max - v) / (v_max - v_min) * ph; }
};

// An x tick: where, and whether it is labelled.
struct XTick {
  double at = 0;
  bool labelled = false;
};

// The x axis's ticks within the frame: 1, 2 and 5 times powers of ten, labelled at the powers
// of ten when the axis spans two decades or more, else at each; when that labels fewer than
// two, every 1..9 times a power of ten is a labelled tick.
std::vector<XTick> XTicks(const Frame& f) {
  const double span = f.d_hi - f.d_lo;
  auto ticks = [&](std::initializer_list<double> multiples, bool decades_only) {
    std::vector<XTick> out;
    for (double d = std::floor(f.d_lo); d <= std::ceil(f.d_hi); ++d) {
      for (double m : multiples) {
        const double t = m * std::pow(10.0, d);
        const double l = std::log10(t);
        if (l < f.d_lo - 1e-9 || l > f.d_hi + 1e-9) continue;
        out.push_back({t, !decades_only || m == 1.0});
      }
    }
    return out;
  };
  std::vector<XTick> out = ticks({1.0, 2.0, 5.0}, span >= 2);
  const auto labelled =
      std::count_if(out.begin(), out.end(), [](const XTick& t) { return t.labelled; });
  if (labelled < 2) out = ticks({1, 2, 3, 4, 5, 6, 7, 8, 9}, false);
  return out;
}

// The geometry for `labels` (the legend's width and height) and the scales for the data's range
// (t_min..t_max tokens, v_min..v_max values; infinite when there is no data).
Frame LayOut(const std::vector<std::string>& labels, const PlotOptions& options, double t_min,
             double t_max, double v_min, double v_max) {
  Frame f;
  size_t longest = 0;
  for (const std::string& l : labels) longest = std::max(longest, l.size());
  // The legend sits right of the plot, as wide as its longest label (about 6.6 px a character
  // at 12 px), and the figure grows by it rather than squeezing the plot.
  f.right = std::max(200.0, 56 + 6.6 * static_cast<double>(longest));
  f.width = options.width - 200 + f.right;
  f.height = std::max<double>(options.height, f.top + 16 + 30.0 * labels.size());
  f.pw = f.width - f.left - f.right;
  f.ph = f.height - f.top - f.bottom;
  if (!std::isfinite(v_min)) v_min = 0, v_max = 1, t_min = 1, t_max = 10;
  if (v_max - v_min < 1e-12) v_min -= 0.5, v_max += 0.5;
  f.step = NiceStep(v_max - v_min, 5);
  f.v_min = std::floor(v_min / f.step) * f.step;
  f.v_max = std::ceil(v_max / f.step) * f.step;
  if (f.v_max - f.v_min < f.step * 1.5) f.v_max += f.step;
  f.y_ticks = static_cast<int>(std::llround((f.v_max - f.v_min) / f.step));
  // The data's range, 3% of it (at least 0.02 decades) as a margin each side; one value
  // alone gets half a decade around it.
  const double lo = std::log10(t_min), hi = std::log10(t_max);
  const double margin = hi - lo < 1e-9 ? 0.5 : std::max(0.03 * (hi - lo), 0.02);
  f.d_lo = lo - margin;
  f.d_hi = hi + margin;
  return f;
}

// The title, grid, ticks, axis labels and the plot's frame.
std::string AxesSvg(const Frame& f, const std::string& title, const std::string& y_label,
                    analysis::XAxis x) {
  const double left = f.left, top = f.top, pw = f.pw, ph = f.ph;
  std::string svg = absl::StrCat("<text x=\"", Num(left), "\" y=\"22\" font-size=\"14\">",
                                 Escape(title), "</text>\n");
  // Axes, grid and ticks: labelled ticks solid, the others as minor dashed lines.
  const std::vector<XTick> x_ticks = XTicks(f);
  absl::StrAppend(&svg, "<g stroke=\"#ccc\" stroke-width=\"0.5\">\n");
  for (const XTick& tick : x_ticks) {
    absl::StrAppend(&svg, "<line x1=\"", Num(f.X(tick.at)), "\" y1=\"", Num(top), "\" x2=\"",
                    Num(f.X(tick.at)), "\" y2=\"", Num(top + ph), "\"",
                    tick.labelled ? "" : " stroke-dasharray=\"2,3\"", "/>\n");
  }
  for (int i = 0; i <= f.y_ticks; ++i) {
    const double v = f.v_min + f.step * i;
    absl::StrAppend(&svg, "<line x1=\"", Num(left), "\" y1=\"", Num(f.Y(v)), "\" x2=\"",
                    Num(left + pw), "\" y2=\"", Num(f.Y(v)), "\"/>\n");
  }
  absl::StrAppend(&svg, "</g>\n<g fill=\"#333\">\n");
  for (const XTick& tick : x_ticks) {
    if (!tick.labelled) continue;
    absl::StrAppend(&svg, "<text x=\"", Num(f.X(tick.at)), "\" y=\"", Num(top + ph + 16),
                    "\" text-anchor=\"middle\">", FormatX(tick.at, x), "</text>\n");
  }
  for (int i = 0; i <= f.y_ticks; ++i) {
    const double v = f.v_min + f.step * i;
    absl::StrAppend(&svg, "<text x=\"", Num(left - 6), "\" y=\"", Num(f.Y(v) + 4),
                    "\" text-anchor=\"end\">",
                    Escape(FormatValue(std::abs(v) < f.step * 1e-9 ? 0 : v)), "</text>\n");
  }
  absl::StrAppend(&svg, "<text x=\"", Num(left + pw / 2), "\" y=\"", Num(f.height - 10),
                  "\" text-anchor=\"middle\">",
                  x == analysis::XAxis::kFlops ? "training FLOPs" : "tokens seen",
                  " (log scale)</text>\n", "<text transform=\"translate(16,", Num(top + ph / 2),
                  ") rotate(-90)\" text-anchor=\"middle\">", Escape(y_label), "</text>\n",
                  "</g>\n<rect x=\"", Num(left), "\" y=\"", Num(top), "\" width=\"", Num(pw),
                  "\" height=\"", Num(ph), "\" fill=\"none\" stroke=\"#333\"/>\n");
  return svg;
}

// The dashed threshold line and its value.
std::string ThresholdSvg(const Frame& f, double threshold) {
  return absl::StrCat("<line class=\"threshold\" x1=\"", Num(f.left), "\" y1=\"",
                      Num(f.Y(threshold)), "\" x2=\"", Num(f.left + f.pw), "\" y2=\"",
                      Num(f.Y(threshold)), "\" stroke=\"#555\" stroke-dasharray=\"6,4\"/>\n",
                      "<text x=\"", Num(f.left + f.pw - 4), "\" y=\"", Num(f.Y(threshold) - 4),
                      "\" text-anchor=\"end\" fill=\"#555\">", Escape(FormatValue(threshold)),
                      "</text>\n");
}

// Group `g`: its band (the seeds' range, or for an emergence plot the Kaplan-Meier curve's
// pointwise confidence band; when it has several cells), its
// median line, an open circle where a group that never crossed ends, and its legend entry (with
// its T(x) when a threshold is shown).
std::string GroupSvg(const Frame& f, size_t g, const Band& b, const CompareRow& row,
                     const std::string& label, const CompareSpec& spec,
                     const PlotOptions& options) {
  const char* colour = kColours[g % (sizeof kColours / sizeof *kColours)];
  const char* dash = g >= 8 ? " stroke-dasharray=\"5,2\"" : "";
  std::string svg = absl::StrCat("<g class=\"group\" data-label=\"", Escape(label), "\">\n");
  // The seeds' range around a metric's median, or the band of an emergence curve.
  if (b.tokens.size() >= 2 && row.cell_ids.size() > 1) {
    std::string band;
    for (size_t i = 0; i < b.tokens.size(); ++i) {
      absl::StrAppend(&band, i ? " L" : "M", Num(f.X(b.tokens[i])), ",", Num(f.Y(b.hi[i])));
    }
    for (size_t i = b.tokens.size(); i-- > 0;) {
      absl::StrAppend(&band, " L", Num(f.X(b.tokens[i])), ",", Num(f.Y(b.lo[i])));
    }
    absl::StrAppend(&svg, "<path d=\"", band, " Z\" fill=\"", colour,
                    "\" fill-opacity=\"0.15\" stroke=\"none\"/>\n");
  }
  std::string line;
  for (size_t i = 0; i < b.tokens.size(); ++i) {
    absl::StrAppend(&line, i ? " L" : "M", Num(f.X(b.tokens[i])), ",", Num(f.Y(b.median[i])));
  }
  if (!line.empty()) {
    absl::StrAppend(&svg, "<path class=\"curve\" d=\"", line, "\" fill=\"none\" stroke=\"", colour,
                    "\" stroke-width=\"2\"", dash, "/>\n");
  }
  // Censoring is relative to a threshold: without one shown there is nothing to mark.
  const bool censored = (options.threshold || options.emergence) &&
                        row.emergence.median.kind == analysis::Crossing::kRight;
  if (censored && !b.tokens.empty()) {
    // Never reached the threshold: an open circle at the end of its curve.
    absl::StrAppend(&svg, "<circle class=\"censored\" cx=\"", Num(f.X(b.tokens.back())), "\" cy=\"",
                    Num(f.Y(b.median.back())), "\" r=\"4\" fill=\"white\" stroke=\"", colour,
                    "\" stroke-width=\"2\"/>\n");
  }
  const double lx = f.left + f.pw;
  const double ly = f.top + 8 + 30.0 * static_cast<double>(g);
  absl::StrAppend(&svg, "<line x1=\"", Num(lx + 12), "\" y1=\"", Num(ly), "\" x2=\"", Num(lx + 32),
                  "\" y2=\"", Num(ly), "\" stroke=\"", colour, "\" stroke-width=\"2\"", dash,
                  "/>\n<text x=\"", Num(lx + 38), "\" y=\"", Num(ly + 4), "\">", Escape(label),
                  "</text>\n");
  if (options.threshold || options.emergence) {
    absl::StrAppend(&svg, "<text x=\"", Num(lx + 38), "\" y=\"", Num(ly + 18),
                    "\" fill=\"#555\" font-size=\"11\">",
                    spec.x == analysis::XAxis::kFlops ? "FLOPs" : "T", " = ",
                    Escape(FormatCrossing(row.emergence.median, spec.x)), ", ",
                    row.emergence.crossed, "/", row.emergence.n, " crossed</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n");
  return svg;
}

}  // namespace

std::string RenderSvg(const CompareTable& table, const Curves& curves, const CompareSpec& spec,
                      const PlotOptions& options) {
  std::vector<Band> bands;
  double t_min = std::numeric_limits<double>::infinity(), t_max = 0;
  double v_min = std::numeric_limits<double>::infinity();
  double v_max = -std::numeric_limits<double>::infinity();
  for (const CompareRow& row : table.rows) {
    bands.push_back(GroupBand(row, curves, spec));
    const Band& b = bands.back();
    for (size_t i = 0; i < b.tokens.size(); ++i) {
      t_min = std::min(t_min, b.tokens[i]);
      t_max = std::max(t_max, b.tokens[i]);
      v_min = std::min(v_min, b.lo[i]);
      v_max = std::max(v_max, b.hi[i]);
    }
  }
  // The fraction of cells past the threshold, over the same tokens, on [0, 1].
  CompareSpec shown = spec;
  if (options.emergence && std::isfinite(t_min)) {
    for (size_t g = 0; g < table.rows.size(); ++g) {
      bands[g] = EmergenceBand(table.rows[g], t_min, t_max, spec.level);
    }
    v_min = 0;
    v_max = 1;
    shown.threshold = 0.5;  // where the median is read
    shown.metric = absl::StrCat(
        "fraction of cells with ", spec.metric,
        spec.direction == analysis::Direction::kUp ? " >= " : " <= ", FormatValue(spec.threshold));
  }
  const bool threshold = options.threshold || options.emergence;
  if (threshold) {
    v_min = std::min(v_min, spec.threshold);
    v_max = std::max(v_max, spec.threshold);
  }
  const std::vector<std::string> labels = Labels(table);
  const Frame f = LayOut(labels, options, t_min, t_max, v_min, v_max);

  std::string svg =
      absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", f.width, "\" height=\"",
                   f.height, "\" viewBox=\"0 0 ", f.width, " ", f.height,
                   "\" font-family=\"Helvetica, Arial, sans-serif\" "
                   "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  svg += AxesSvg(f, options.title.empty() ? spec.metric : options.title, shown.metric, spec.x);
  if (threshold) svg += ThresholdSvg(f, shown.threshold);
  // One band and one median line per group; the legend names the group and its T(x).
  for (size_t g = 0; g < table.rows.size(); ++g) {
    svg += GroupSvg(f, g, bands[g], table.rows[g], labels[g], spec, options);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace onset::cli
