// `onset plot`: a metric's curves against tokens, or training FLOPs under spec.x (log axis), as
// a standalone SVG, one line per group of cells (cli/views/compare.h's grouping: the median over
// the group's seeds, their min-max shaded), the threshold as a dashed line, each group's T(x) in
// the legend ("<= 250K" when reached by the first eval point), and groups that never reached it
// marked. With `emergence`, each group's Kaplan-Meier fraction of cells past the threshold
// against tokens instead (a step curve from 0 to 1, survival.h) with its pointwise confidence
// band at spec.level shaded (median_interval.h), the 1/2 level its median is read at dashed.
// Written by onset itself: no plotting stack, nothing fetched, readable as a figure in a paper.
#pragma once

#include <string>

#include "cli/views/compare.h"

namespace onset::cli {

struct PlotOptions {
  std::string title;       // default: "STUDY: METRIC"
  bool threshold = false;  // draw spec.threshold
  bool emergence = false;  // the fraction of cells past spec.threshold instead of the metric
  int width = 720, height = 440;
};

std::string RenderSvg(const CompareTable& table, const Curves& curves, const CompareSpec& spec,
                      const PlotOptions& options);

}  // namespace onset::cli
