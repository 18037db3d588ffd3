#include "coordinator/study/append_only.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace onset::coordinator {
namespace {

using nlohmann::json;

constexpr size_t kMaxChangesShown = 3;

std::string Show(const json* v) {
  if (!v) return "(unset)";
  return v->is_string() ? v->get<std::string>() : v->dump();
}

// Leaves by dotted path: sections' keys ("train.lr") and top-level scalars ("study").
std::map<std::string, const json*> Flatten(const json& config) {
  std::map<std::string, const json*> out;
  if (!config.is_object()) return out;
  for (const auto& [key, value] : config.items()) {
    if (!value.is_object()) {
      out[key] = &value;
      continue;
    }
    for (const auto& [field, v] : value.items()) out[key + "." + field] = &v;
  }
  return out;
}

std::string GridPointKey(const std::map<std::string, std::string>& axes) {
  return json(axes).dump();
}

}  // namespace

std::vector<FieldChange> DiffConfigs(const std::string& before_json,
                                     const std::string& after_json) {
  const json before = json::parse(before_json, nullptr, /*allow_exceptions=*/false);
  const json after = json::parse(after_json, nullptr, /*allow_exceptions=*/false);
  const std::map<std::string, const json*> a = Flatten(before);
  const std::map<std::string, const json*> b = Flatten(after);
  std::vector<FieldChange> changes;
  auto find = [](const std::map<std::string, const json*>& m, const std::string& path) {
    auto it = m.find(path);
    return it == m.end() ? nullptr : it->second;
  };
  std::set<std::string> paths;
  for (const auto& [path, v] : a) paths.insert(path);
  for (const auto& [path, v] : b) paths.insert(path);
  for (const std::string& path : paths) {
    const json* x = find(a, path);
    const json* y = find(b, path);
    if (x && y && *x == *y) continue;
    changes.push_back({path, Show(x), Show(y)});
  }
  return changes;
}

std::string DescribeGridPoint(const std::map<std::string, std::string>& axes) {
  static const std::vector<std::string> kNamed = {"arch", "window", "pos", "tokens", "seed"};
  std::string out;
  auto add = [&out](const std::string& key, const std::string& value) {
    out += (out.empty() ? "" : " ") + key + "=" + value;
  };
  for (const std::string& key : kNamed) {
    if (auto it = axes.find(key); it != axes.end()) add(key, it->second);
  }
  for (const auto& [key, value] : axes) {
    if (std::find(kNamed.begin(), kNamed.end(), key) == kNamed.end()) add(key, value);
  }
  return out;
}

absl::Status CheckAppendOnly(const std::vector<CellSpec>& stored,
                             const std::vector<CellSpec>& submitted) {
  std::unordered_set<std::string> stored_ids;
  std::unordered_map<std::string, const CellSpec*> by_point;
  for (const CellSpec& cell : stored) {
    stored_ids.insert(cell.id);
    by_point.emplace(GridPointKey(cell.axes), &cell);  // the first stored cell of a point
  }
  for (const CellSpec& cell : submitted) {
    if (stored_ids.count(cell.id)) continue;
    auto it = by_point.find(GridPointKey(cell.axes));
    if (it == by_point.end()) continue;
    std::vector<FieldChange> changes = DiffConfigs(it->second->config_json, cell.config_json);
    std::string was;
    std::string now;
    for (size_t i = 0; i < changes.size() && i < kMaxChangesShown; ++i) {
      const FieldChange& c = changes[i];
      was += (i ? ", " : "") + c.path + " = " + c.before;
      now += (i ? ", " : "") + (changes.size() == 1 ? c.after : c.path + " = " + c.after);
    }
    if (changes.size() > kMaxChangesShown) {
      was += " and " + std::to_string(changes.size() - kMaxChangesShown) + " more";
    }
    const std::string remedy = changes.size() == 1 ? "add " + changes[0].path + " as an axis"
                                                   : "make the changed fields axes";
    return absl::FailedPreconditionError(
        "cell " + DescribeGridPoint(cell.axes) + " exists with " +
        (changes.empty() ? "another config" : was) + "; this file gives " +
        (changes.empty() ? "a different one" : now) + ": " + remedy +
        " or use a new study name (a study's cells never change)");
  }
  return absl::OkStatus();
}

}  // namespace onset::coordinator
