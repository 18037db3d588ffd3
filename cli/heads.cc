#include "cli/heads.h"

#include <cstdio>
#include <set>

#include "absl/strings/str_cat.h"
#include "cli/render.h"

namespace onset::cli {

HeadMap BuildHeadMap(const std::map<std::string, std::vector<std::pair<int64_t, double>>>& metrics,
                     int64_t at_tokens) {
  HeadMap map;
  std::set<int64_t> points;
  for (const auto& [name, curve] : metrics) {
    int layer = 0, head = 0;
    char tail = 0;
    if (std::sscanf(name.c_str(), "rh/score/l%dh%d%c", &layer, &head, &tail) != 2) continue;
    for (const auto& [t, v] : curve) points.insert(t);
  }
  map.eval_points.assign(points.begin(), points.end());
  if (points.empty()) return map;
  map.tokens = *points.rbegin();
  if (at_tokens > 0) {
    auto it = points.upper_bound(at_tokens);
    map.tokens = it == points.begin() ? *points.begin() : *std::prev(it);
  }
  for (const auto& [name, curve] : metrics) {
    int layer = 0, head = 0;
    char tail = 0;
    if (std::sscanf(name.c_str(), "rh/score/l%dh%d%c", &layer, &head, &tail) != 2) continue;
    for (const auto& [t, v] : curve) {
      if (t == map.tokens) map.score[{layer, head}] = v;
      if (v > kRetrievalHead && !map.first_retrieval.count({layer, head})) {
        map.first_retrieval[{layer, head}] = t;
      }
    }
  }
  return map;
}

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
