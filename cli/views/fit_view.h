// `onset fit`: a power law fitted to each group's points of one metric, as a table or JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/power_law.h"

namespace onset::cli {

// One group of cells (seeds aggregated) and its fit, or why there is none.
struct FitGroup {
  std::map<std::string, std::string> axes;  // the grouping axes' values
  std::vector<std::string> cell_ids;
  size_t points = 0;  // the points offered to the fit
  std::optional<analysis::PowerLawFit> fit;
  std::string problem;  // when there is no fit
};

// The table: one row per group, the grouping axes `by` first, then CELLS, POINTS, E, B, BETA,
// D0 and RMSE (each estimate +- one standard error where it has one).
std::string RenderFit(const std::string& metric, const std::vector<std::string>& by,
                      const std::vector<FitGroup>& groups);
// {"metric", "model", "min_tokens", "groups": [{"axes", "cells", "fit" (or null and
// "problem")}]}, indented; standard errors that are not finite are null.
std::string FitJson(const std::string& metric, int64_t min_tokens,
                    const std::vector<FitGroup>& groups);

}  // namespace onset::cli
