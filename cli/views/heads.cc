#include "cli/views/heads.h"

#include <cstdio>
#include <set>

#include "absl/strings/str_cat.h"
#include "cli/views/render.h"

namespace onset::cli {

std::string RenderHeadMap(const HeadMap& map) {
  if (map.eval_points.empty()) return "no retrieval-head scores (rh/score/...) for this cell\n";
  std::set<int> layers, heads;
  for (const auto& [key, v] : map.score) {
    layers.insert(key.first);
    heads.insert(key.second);
  }
  std::vector<std::string> headers = {"LAYER"};
  for (int h : heads) headers.push_back("h" + std::to_string(h));
  Table table(headers);
  for (size_t c = 1; c < headers.size(); ++c) table.AlignRight(c);
  for (int l : layers) {
    std::vector<std::string> row = {std::to_string(l)};
    for (int h : heads) {
      auto it = map.score.find({l, h});
      if (it == map.score.end()) {
        row.push_back("-");
        continue;
      }
      char buf[16];
      std::snprintf(buf, sizeof buf, "%.2f%s", it->second, it->second > kRetrievalHead ? "*" : " ");
      row.push_back(buf);
    }
    table.AddRow(std::move(row));
  }
  std::string out = absl::StrCat("retrieval-head scores at ", FormatTokens(map.tokens),
                                 " tokens (* above ", FormatValue(kRetrievalHead), "; eval points ",
                                 FormatTokens(map.eval_points.front()), " .. ",
                                 FormatTokens(map.eval_points.back()), ")\n", table.Render());
  if (!map.first_retrieval.empty()) {
    out += "first above the threshold:";
    for (const auto& [key, t] : map.first_retrieval) {
      absl::StrAppend(&out, " l", key.first, "h", key.second, "@", FormatTokens(t));
    }
    out += "\n";
  }
  return out;
}

}  // namespace onset::cli
