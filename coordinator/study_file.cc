#include "coordinator/study_file.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "absl/status/status.h"

namespace onset::coordinator {
namespace {

using nlohmann::json;

constexpr const char* kSections[] = {"model", "train", "data", "eval"};
constexpr size_t kMaxNameLength = 64;
constexpr int64_t kMaxSeedCount = 10'000;

// Thrown inside the parser only, caught in ParseStudyFile: a located problem.
struct StudyError {
  int line;  // 1-based
  std::string key;
  std::string message;
};

int Line(const YAML::Node& node) { return node.Mark().line >= 0 ? node.Mark().line + 1 : 1; }

[[noreturn]] void Fail(int line, std::string key, std::string message) {
  throw StudyError{line, std::move(key), std::move(message)};
}

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

bool MatchesNumber(const std::string& s, bool integer) {
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kFloat(R"([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
  return std::regex_match(s, integer ? kInt : kFloat);
}

// A YAML scalar as JSON: integer, number, boolean or null when it reads as one and is not
// quoted; a string otherwise ("250K" stays a string for the token-count parser).
json ScalarToJson(const YAML::Node& node, const std::string& key) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: always a string
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (MatchesNumber(s, /*integer=*/true)) {
    int64_t v = 0;
    const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
      Fail(Line(node), key, "integer '" + s + "' is out of range");
    }
    return v;
  }
  if (MatchesNumber(s, /*integer=*/false)) return std::stod(s);
  return s;
}

// Rejects a mapping that names a key twice (yaml-cpp silently keeps one).
void CheckDuplicateKeys(const YAML::Node& map, const std::string& prefix) {
  std::set<std::string> keys;
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (!keys.insert(key).second) Fail(Line(kv.first), Join(prefix, key), "duplicate key");
  }
}

// Converts a YAML value to JSON, recording the line of every mapping key by its dotted path.
json ToJson(const YAML::Node& node, const std::string& path, std::map<std::string, int>* lines) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(node, path);
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& e : node) arr.push_back(ToJson(e, path, lines));
      return arr;
    }
    case YAML::NodeType::Map: {
      CheckDuplicateKeys(node, path);
      json obj = json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) Fail(Line(kv.first), path, "keys must be plain names");
        const std::string key = kv.first.Scalar();
        (*lines)[Join(path, key)] = Line(kv.first);
        obj[key] = ToJson(kv.second, Join(path, key), lines);
      }
      return obj;
    }
  }
  return nullptr;
}

class StudyParser {
 public:
  StudyParser(const std::string& source_name, const std::string& base_dir)
      : source_(source_name), base_dir_(base_dir) {}

  absl::StatusOr<StudySpec> Parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      Fail(e.mark.line >= 0 ? e.mark.line + 1 : 1, "", "invalid YAML: " + e.msg);
    }
    if (root.IsNull()) Fail(1, "name", "is required (the file is empty)");
    if (!root.IsMap()) {
      Fail(Line(root), "", "a study file must be a mapping with keys name, grid, model, ...");
    }
    CheckDuplicateKeys(root, "");

    StudySpec spec;
    spec.source_name = source_;
    spec.source_yaml = text;
    std::optional<YAML::Node> grid_node;
    json base = json::object();
    bool has_name = false;
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      const YAML::Node& value = kv.second;
      const int line = Line(kv.first);
      key_lines_[key] = line;
      if (key == "name") {
        has_name = true;
        spec.name = ParseName(value, line);
      } else if (key == "description") {
        if (!value.IsNull() && !value.IsScalar()) Fail(line, key, "must be a string");
        spec.description = value.IsNull() ? "" : value.Scalar();
      } else if (key == "grid") {
        grid_node = value;
      } else if (IsSection(key)) {
        if (!value.IsNull() && !value.IsMap()) Fail(line, key, "must be a mapping");
        base[key] = value.IsNull() ? json::object() : ToJson(value, key, &key_lines_);
      } else {
        Fail(line, key, "unknown key (expected name, description, model, train, data, eval, "
                        "grid)");
      }
    }
    if (!has_name) Fail(1, "name", "is required");
    base["study"] = spec.name;
    if (grid_node) ParseGrid(*grid_node);

    if (axes_.Size() > kMaxGridPoints) {
      Fail(key_lines_["grid"], "grid",
           "expands to " + std::to_string(axes_.Size()) + " cells, more than the limit of " +
               std::to_string(kMaxGridPoints));
    }
    SetStudyShortContext(&base);
    ResolveDataPaths(&base);
    absl::StatusOr<std::vector<CellSpec>> cells =
        ExpandGrid(base, axes_, [this](const model::FieldError& e, const GridPoint& p) {
          return Describe(e, p);
        });
    if (!cells.ok()) return cells.status();
    spec.cells = std::move(*cells);
    return spec;
  }

  std::string Format(const StudyError& e) const {
    std::string out = source_ + ":" + std::to_string(e.line) + ": ";
    if (!e.key.empty()) out += e.key + ": ";
    return out + e.message;
  }

 private:
  // Short-context loss is defined at the smallest window of the study (SCIENCE.md), the same
  // length for every cell, full-attention cells included. An explicit eval.short_context wins.
  void SetStudyShortContext(json* base) const {
    json& eval = (*base)["eval"];
    if (eval.is_null()) eval = json::object();
    if (!eval.is_object() || eval.contains("short_context")) return;
    std::optional<int64_t> smallest;
    auto consider = [&](const json& w) {
      if (w.is_number_integer() && w.get<int64_t>() >= 1) {
        smallest = std::min(smallest.value_or(w.get<int64_t>()), w.get<int64_t>());
      }
    };
    for (const json& w : axes_[Axis::kWindow]) consider(w);
    if (base->contains("model") && (*base)["model"].is_object()) {
      consider((*base)["model"].value("window", json()));
    }
    if (smallest) eval["short_context"] = *smallest;
  }

  // Token files named relative to the study file resolve against its directory.
  void ResolveDataPaths(json* base) const {
    if (base_dir_.empty() || !base->contains("data") || !(*base)["data"].is_object()) return;
    for (const char* key : {"path", "heldout_path"}) {
      json& v = (*base)["data"][key];
      if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>()[0] != '/') {
        v = base_dir_ + "/" + v.get<std::string>();
      } else if (v.is_null()) {
        (*base)["data"].erase(key);
      }
    }
  }

  static bool IsSection(const std::string& key) {
    for (const char* s : kSections) {
      if (key == s) return true;
    }
    return false;
  }

  static std::string ParseName(const YAML::Node& value, int line) {
    if (!value.IsScalar() || value.Scalar().empty()) Fail(line, "name", "must be a non-empty string");
    const std::string& name = value.Scalar();
    static const std::regex kName(R"([A-Za-z0-9_.-]+)");
    if (!std::regex_match(name, kName)) {
      Fail(line, "name", "'" + name + "' may use only letters, digits, '_', '.' and '-'");
    }
    if (name.size() > kMaxNameLength) {
      Fail(line, "name", "is " + std::to_string(name.size()) + " characters long; at most " +
                             std::to_string(kMaxNameLength) + " are allowed");
    }
    return name;
  }

  void ParseGrid(const YAML::Node& grid) {
    const int grid_line = key_lines_["grid"];
    if (grid.IsNull()) return;
    if (!grid.IsMap()) Fail(grid_line, "grid", "must be a mapping of axes (arch, window, pos, "
                                               "tokens, seeds)");
    CheckDuplicateKeys(grid, "grid");
    for (const auto& kv : grid) {
      const std::string key = kv.first.Scalar();
      const int line = Line(kv.first);
      std::optional<Axis> axis;
      for (Axis a : kAllAxes) {
        if (key == GridKey(a)) axis = a;
      }
      if (!axis) {
        Fail(line, "grid." + key, "unknown axis (expected arch, window, pos, tokens, seeds)");
      }
      ParseAxis(*axis, kv.second, line);
    }
  }

  void ParseAxis(Axis axis, const YAML::Node& value, int line) {
    const std::string key = std::string("grid.") + GridKey(axis);
    // A grid axis and the same field in its section would silently fight; refuse.
    if (auto it = key_lines_.find(FieldPath(axis)); it != key_lines_.end()) {
      Fail(it->second, FieldPath(axis),
           "is also set by " + key + " (line " + std::to_string(line) + "); set it in one place");
    }
    std::vector<json>& values = axes_[axis];
    std::vector<int>& lines = axis_lines_[static_cast<int>(axis)];
    if (value.IsNull()) Fail(line, key, "must list at least one value");
    if (axis == Axis::kSeed && value.IsScalar()) {
      json n = ScalarToJson(value, key);
      if (!n.is_number_integer()) {
        Fail(Line(value), key, "must be a list of integers or a count N (meaning 0..N-1)");
      }
      if (n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxSeedCount) {
        Fail(Line(value), key, "a seed count must be between 1 and " +
                                   std::to_string(kMaxSeedCount));
      }
      for (int64_t s = 0; s < n.get<int64_t>(); ++s) {
        values.push_back(s);
        lines.push_back(Line(value));
      }
      return;
    }
    if (value.IsScalar()) {
      values.push_back(ScalarToJson(value, key));
      lines.push_back(Line(value));
      return;
    }
    if (!value.IsSequence()) Fail(line, key, "must be a list or a single value");
    if (value.size() == 0) Fail(line, key, "must list at least one value");
    for (const auto& e : value) {
      if (!e.IsScalar()) Fail(Line(e), key, "entries must be single values, not lists or maps");
      values.push_back(ScalarToJson(e, key));
      lines.push_back(Line(e));
    }
  }

  // Locates a cell-config error: the grid entry that set the field; else the key in the file;
  // else, for fields the arch decides, the arch entry; else the section; else line 1.
  std::string Describe(const model::FieldError& e, const GridPoint& p) const {
    StudyError out{1, e.path, e.message};
    if (std::optional<Axis> a = AxisForField(e.path); a && p[static_cast<int>(*a)] >= 0) {
      const int index = p[static_cast<int>(*a)];
      out.line = axis_lines_[static_cast<int>(*a)][index];
      out.key = std::string("grid.") + GridKey(*a);
      out.message += " (value " + axes_[*a][index].dump() + ")";
      return Format(out);
    }
    if (auto it = key_lines_.find(e.path); it != key_lines_.end()) {
      out.line = it->second;
      return Format(out);
    }
    const int arch = p[static_cast<int>(Axis::kArch)];
    if ((e.path == "model.window" || e.path == "model.pattern") && arch >= 0) {
      out.line = axis_lines_[static_cast<int>(Axis::kArch)][arch];
      out.message += " (for arch " + axes_[Axis::kArch][arch].dump() + ")";
      if (e.path == "model.window") out.message += "; add a window axis to grid";
      return Format(out);
    }
    const std::string section = e.path.substr(0, e.path.find('.'));
    if (auto it = key_lines_.find(section); it != key_lines_.end()) out.line = it->second;
    return Format(out);
  }

  std::string source_;
  std::string base_dir_;
  std::map<std::string, int> key_lines_;  // dotted key path -> line of the key
  GridAxes axes_;
  std::array<std::vector<int>, kNumAxes> axis_lines_;  // line of each grid entry
};

}  // namespace

absl::StatusOr<StudySpec> ParseStudyFile(const std::string& source_name,
                                         const std::string& text, const std::string& base_dir) {
  StudyParser parser(source_name, base_dir);
  try {
    return parser.Parse(text);
  } catch (const StudyError& e) {
    return absl::InvalidArgumentError(parser.Format(e));
  } catch (const YAML::Exception& e) {
    // yaml-cpp may throw on malformed input while we walk nodes.
    return absl::InvalidArgumentError(source_name + ":" + std::to_string(e.mark.line + 1) +
                                      ": invalid YAML: " + e.msg);
  }
}

}  // namespace onset::coordinator
