#include "cli/views/fit_view.h"

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/views/table.h"

namespace onset::cli {
namespace {

std::string PlusMinus(double v, double se) {
  return std::isnan(se) ? FormatValue(v) : FormatValue(v) + " +- " + FormatValue(se);
}

nlohmann::json Number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

std::string RenderFit(const std::string& metric, const std::vector<std::string>& by,
                      const std::vector<FitGroup>& groups) {
  std::vector<std::string> headers = CapitalHeaders(by);
  const size_t first = headers.size();
  for (const char* h : {"CELLS", "POINTS", "E", "B", "BETA", "D0", "RMSE"}) headers.push_back(h);
  Table text(headers);
  for (size_t c = first; c < headers.size(); ++c) text.AlignRight(c);
  for (const FitGroup& g : groups) {
    std::vector<std::string> cells;
    for (const std::string& a : by) cells.push_back(g.axes.at(a));
    cells.push_back(std::to_string(g.cell_ids.size()));
    if (const auto& fit = g.fit) {
      for (const std::string& v :
           {std::to_string(fit->points), PlusMinus(fit->E, fit->E_se), PlusMinus(fit->B, fit->B_se),
            PlusMinus(fit->beta, fit->beta_se), FormatTokens(static_cast<int64_t>(fit->D0)),
            FormatValue(fit->rmse)}) {
        cells.push_back(v);
      }
    } else {
      cells.push_back(std::to_string(g.points));
      cells.push_back("no fit: " + g.problem);
    }
    text.AddRow(std::move(cells));
  }
  return metric + " = E + B (D / D0)^-beta, least squares per group (+- one standard error)\n" +
         text.Render();
}

std::string FitJson(const std::string& metric, int64_t min_tokens,
                    const std::vector<FitGroup>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const FitGroup& g : groups) {
    nlohmann::json j = {{"axes", g.axes}, {"cells", g.cell_ids}};
    if (const auto& fit = g.fit) {
      j["fit"] = {{"E", fit->E},          {"E_se", Number(fit->E_se)},
                  {"B", fit->B},          {"B_se", Number(fit->B_se)},
                  {"beta", fit->beta},    {"beta_se", Number(fit->beta_se)},
                  {"D0", fit->D0},        {"rmse", fit->rmse},
                  {"points", fit->points}};
    } else {
      j["fit"] = nullptr;
      j["problem"] = g.problem;
    }
    out.push_back(j);
  }
  return nlohmann::json({{"metric", metric},
                         {"model", "L(D) = E + B * (D / D0)^-beta"},
                         {"min_tokens", min_tokens},
                         {"groups", out}})
             .dump(2) +
         "\n";
}

}  // namespace onset::cli
