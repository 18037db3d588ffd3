#include "coordinator/study/study_file.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "base/did_you_mean.h"
#include "common/study_text.h"
#include "model/config/study_defaults.h"

namespace onset::coordinator {
namespace {

using nlohmann::json;

constexpr const char* kSections[] = {"model", "train", "data", "eval"};
// Limits that keep a mistyped file from asking for absurd work.
constexpr size_t kMaxNameLength = 64;
constexpr int64_t kMaxSeedCount = 10'000;
constexpr size_t kMaxAxes = 32;
constexpr size_t kMaxAxisValues = 10'000;
constexpr size_t kMaxExcludeRules = 100;
// Nesting of YAML collections: a study file needs 5 (grid > zip > group > axis > values).
constexpr int kMaxNesting = 16;

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

// A number written in decimal (MatchesNumber), refused where it does not fit a double: beyond
// its range, or so small that it would read as 0 or as a denormal that has lost precision.
double ParseFloat(const std::string& s, int line, const std::string& key) {
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) Fail(line, key, "'" + s + "' is not a number");
  if (!std::isfinite(d)) {
    Fail(line, key, "number '" + s + "' is out of range (at most about 1.8e308)");
  }
  const std::string mantissa = s.substr(0, s.find_first_of("eE"));
  if (d == 0 && mantissa.find_first_of("123456789") != std::string::npos) {
    Fail(line, key, "number '" + s + "' is too small: it would read as 0 (write 0 for zero)");
  }
  if (std::fpclassify(d) == FP_SUBNORMAL) {
    Fail(line, key,
         "number '" + s + "' is too small to hold exactly (the smallest is about 2.2e-308)");
  }
  return d;
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
  if (MatchesNumber(s, /*integer=*/false)) return ParseFloat(s, Line(node), key);
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

// Where the values of one grid axis were written, for messages.
struct AxisSource {
  std::vector<std::string> keys;        // per column: "grid.arch", "grid.zip.model.heads", ...
  std::vector<std::vector<int>> lines;  // [step][column]
  int line = 1;                         // the axis' key
};

// Where a dependent field was written.
struct DependentSource {
  std::string key;  // "depends.train.lr"
  int line = 1;
  std::vector<int> value_lines;
  int default_line = 1;
};

// A value as written and where.
struct WrittenValue {
  json value;
  int line;
};

// "1 value", "3 values".
std::string Values(size_t n) { return std::to_string(n) + (n == 1 ? " value" : " values"); }

// A value quoted in a message, cut short when it is long (a 400-digit count).
std::string Clip(const std::string& s) {
  constexpr size_t kMax = 40;
  return s.size() <= kMax ? s : s.substr(0, kMax - 3) + "...";
}

// " (did you mean model.d_model?)" for a bare key in `grid` or `depends`: the closest named
// axis (or zip, in the grid), else the field whose key it is or is close to, else what is
// accepted.
std::string SuggestField(const std::string& key, bool in_grid) {
  std::vector<std::string> named;
  for (const NamedAxis& a : kNamedAxes) named.push_back(a.key);
  if (in_grid) named.push_back("zip");
  if (std::optional<std::string> m = base::ClosestMatch(key, named)) {
    return " (did you mean " + *m + "?)";
  }
  const std::vector<std::string>& fields = model::CellConfigFields();
  std::vector<std::string> keys;
  for (const std::string& f : fields) keys.push_back(f.substr(f.find('.') + 1));
  std::optional<std::string> m;
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) m = key;
  if (!m) m = base::ClosestMatch(key, keys);
  if (m) {
    const size_t i = std::find(keys.begin(), keys.end(), *m) - keys.begin();
    return " (did you mean " + fields[i] + "?)";
  }
  return in_grid ? " (expected arch, window, pos, tokens, seeds, zip or a field path such as "
                   "train.lr)"
                 : " (expected a field path such as train.lr)";
}

// Refuses what a study file never needs and what makes YAML costly before any node is built:
// anchors and aliases (aliases expand into shared nodes, so nine lines of them are a billion
// values: "billion laughs"), nesting deeper than kMaxNesting, and a second document (which
// YAML::Load would silently drop). Reads the event stream only.
class StructureCheck : public YAML::EventHandler {
 public:
  explicit StructureCheck(const std::string& text) : text_(text) {}

  // Throws StudyError at the first problem.
  void Run() {
    std::istringstream in(text_);
    YAML::Parser parser(in);
    try {
      while (parser.HandleNextDocument(*this)) {
      }
    } catch (const YAML::ParserException& e) {
      // An alias of an anchor that does not exist is refused as an alias, not as bad YAML.
      if (e.msg == YAML::ErrorMsg::UNKNOWN_ANCHOR) Refuse(e.mark, "alias *" + NameAt(e.mark));
      throw;
    }
  }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) {
      Fail(LineOf(mark), "", "a study file is one YAML document; a second one starts here");
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Anchored(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    Refuse(mark, "alias *" + NameAt(mark));
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Anchored(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { --depth_; }
  void OnAnchor(const YAML::Mark& mark, const std::string& name) override {
    Refuse(mark, "anchor &" + name);
  }

 private:
  static int LineOf(const YAML::Mark& mark) { return mark.line >= 0 ? mark.line + 1 : 1; }

  [[noreturn]] static void Refuse(const YAML::Mark& mark, const std::string& what) {
    Fail(LineOf(mark), what,
         "YAML anchors and aliases are not allowed in study files; write each value out");
  }

  // Anchors are reported by OnAnchor; this catches one that it did not report.
  static void Anchored(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) Refuse(mark, "anchor");
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Anchored(mark, anchor);
    if (++depth_ > kMaxNesting) {
      Fail(LineOf(mark), "",
           "nesting deeper than " + std::to_string(kMaxNesting) +
               " levels: a study file needs a few (grid, zip, a group, its lists)");
    }
  }

  // The name of the alias written at `mark` ("*name"), as far as the text shows it.
  std::string NameAt(const YAML::Mark& mark) const {
    if (mark.pos < 0 || static_cast<size_t>(mark.pos) >= text_.size()) return "";
    size_t i = static_cast<size_t>(mark.pos);
    if (text_[i] == '*') ++i;
    size_t end = i;
    while (end < text_.size() && end - i < 64 &&
           std::string_view(" \t\r\n,[]{}").find(text_[end]) == std::string_view::npos) {
      ++end;
    }
    return text_.substr(i, end - i);
  }

  const std::string& text_;
  int documents_ = 0;
  int depth_ = 0;
};

class StudyParser {
 public:
  StudyParser(const std::string& source_name, const std::string& base_dir)
      : source_(source_name), base_dir_(base_dir) {}

  absl::StatusOr<StudySpec> Parse(const std::string& text) {
    if (absl::Status s = common::CheckStudyText(source_, text); !s.ok()) return s;
    YAML::Node root;
    try {
      StructureCheck(text).Run();
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
    std::map<std::string, YAML::Node> later;  // grid, depends, exclude: after the sections
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
        if (spec.description.size() > kMaxDescriptionLength) {
          Fail(line, key,
               "is " + std::to_string(spec.description.size()) + " bytes long; at most " +
                   std::to_string(kMaxDescriptionLength) + " are allowed");
        }
      } else if (key == "tags") {
        spec.tags = ParseTags(value, line);
      } else if (key == "grid" || key == "depends" || key == "exclude") {
        later[key] = value;
      } else if (key == "resources") {
        spec.devices = ParseResources(value, line);
      } else if (IsSection(key)) {
        if (!value.IsNull() && !value.IsMap()) Fail(line, key, "must be a mapping");
        base[key] = value.IsNull() ? json::object() : ToJson(value, key, &key_lines_);
      } else {
        static const std::vector<std::string> kKeys = {
            "name", "description", "tags",    "model",   "train",    "data",
            "eval", "grid",        "exclude", "depends", "resources"};
        const std::string near = base::DidYouMean(key, kKeys);
        Fail(line, key,
             "unknown key" + (near.empty() ? " (expected name, description, tags, model, train, "
                                             "data, eval, grid, exclude, depends, resources)"
                                           : near));
      }
    }
    if (!has_name) Fail(1, "name", "is required");
    base["study"] = spec.name;
    ReadShareTrunk(&base, &spec);
    if (later.count("grid")) ParseGrid(later["grid"]);
    if (later.count("depends")) ParseDepends(later["depends"]);
    if (later.count("exclude")) ParseExclude(later["exclude"]);

    if (grid_.Size() > kMaxGridPoints) {
      Fail(key_lines_["grid"], "grid",
           "expands to " + std::to_string(grid_.Size()) + " points, more than the limit of " +
               std::to_string(kMaxGridPoints));
    }
    CheckExclusion();
    model::ApplyStudyDefaults(&base, [this](const std::string& path) { return FieldOnGrid(path); });
    absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(
        base, grid_,
        [this](const model::FieldError& e, const GridPoint& p) { return Describe(e, p); },
        [this](json* cell) { ResolveDataPaths(cell); });
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
  // ----- grid ---------------------------------------------------------------------------------

  void ParseGrid(const YAML::Node& grid) {
    const int grid_line = key_lines_["grid"];
    if (grid.IsNull()) return;
    if (!grid.IsMap()) {
      Fail(grid_line, "grid",
           "must be a mapping of axes (arch, window, pos, tokens, seeds, zip, or field paths "
           "such as train.lr)");
    }
    CheckDuplicateKeys(grid, "grid");
    for (const auto& kv : grid) {
      const std::string key = kv.first.Scalar();
      const int line = Line(kv.first);
      if (key == "zip") {
        ParseZip(kv.second, line);
        continue;
      }
      const std::string path = FieldOfKey(key, line, "grid.");
      std::vector<WrittenValue> values = ParseValues(key, kv.second, line, "grid." + key);
      AddAxis({path}, {"grid." + key}, {values}, line);
    }
    // Seeds outermost, then budgets, then the rest in file order: every seed-0 cell is queued
    // before any seed-1 cell, and smaller budgets (as listed) before larger ones.
    auto rank = [this](size_t a) {
      const std::vector<std::string>& paths = grid_.axes[a].paths;
      if (std::count(paths.begin(), paths.end(), "train.seed")) return 0;
      if (std::count(paths.begin(), paths.end(), "train.tokens")) return 1;
      return 2;
    };
    std::vector<size_t> order(grid_.axes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rank(a) < rank(b); });
    std::vector<GridAxis> axes;
    std::vector<AxisSource> sources;
    for (size_t i : order) {
      axes.push_back(std::move(grid_.axes[i]));
      sources.push_back(std::move(axis_sources_[i]));
    }
    grid_.axes = std::move(axes);
    axis_sources_ = std::move(sources);
  }

  // zip: one group {a: [...], b: [...]} or a list of them; a group's lists have equal lengths
  // and make one axis whose steps set every field of the group.
  void ParseZip(const YAML::Node& node, int line) {
    if (node.IsMap()) return ParseZipGroup(node, line);
    if (!node.IsSequence() || node.size() == 0) {
      Fail(line, "grid.zip",
           "must be a list of groups of axes that vary together, e.g. "
           "- {model.d_model: [64, 128], model.heads: [2, 4]}");
    }
    for (const auto& group : node) {
      if (!group.IsMap()) Fail(Line(group), "grid.zip", "each group must be a mapping of axes");
      ParseZipGroup(group, Line(group));
    }
  }

  void ParseZipGroup(const YAML::Node& group, int line) {
    if (group.size() == 0) Fail(line, "grid.zip", "a group must name at least one axis");
    CheckDuplicateKeys(group, "grid.zip");
    std::vector<std::string> paths;
    std::vector<std::string> keys;
    std::vector<std::vector<WrittenValue>> columns;
    for (const auto& kv : group) {
      const std::string key = kv.first.Scalar();
      const int key_line = Line(kv.first);
      const std::string error_key = "grid.zip." + key;
      paths.push_back(FieldOfKey(key, key_line, "grid.zip."));
      keys.push_back(error_key);
      columns.push_back(ParseValues(key, kv.second, key_line, error_key));
      if (columns.back().size() != columns.front().size()) {
        Fail(key_line, error_key,
             "lists " + Values(columns.back().size()) + " but " + keys.front() + " lists " +
                 Values(columns.front().size()) + "; axes in a zip group need equal lengths");
      }
    }
    AddAxis(paths, keys, columns, line);
  }

  // The values of one axis: a list, a single value, or for `seeds` a count N (0..N-1).
  std::vector<WrittenValue> ParseValues(const std::string& key, const YAML::Node& value, int line,
                                        const std::string& error_key) {
    std::vector<WrittenValue> values;
    if (value.IsNull()) Fail(line, error_key, "must list at least one value");
    if (key == "seeds" && value.IsScalar()) {
      json n = ScalarToJson(value, error_key);
      if (!n.is_number_integer()) {
        Fail(Line(value), error_key, "must be a list of integers or a count N (meaning 0..N-1)");
      }
      if (n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxSeedCount) {
        Fail(Line(value), error_key,
             "a seed count must be between 1 and " + std::to_string(kMaxSeedCount));
      }
      for (int64_t s = 0; s < n.get<int64_t>(); ++s) values.push_back({s, Line(value)});
      return values;
    }
    if (value.IsScalar()) return {{ScalarToJson(value, error_key), Line(value)}};
    if (!value.IsSequence()) Fail(line, error_key, "must be a list or a single value");
    if (value.size() == 0) Fail(line, error_key, "must list at least one value");
    if (value.size() > kMaxAxisValues) {
      Fail(line, error_key,
           "lists " + std::to_string(value.size()) + " values; at most " +
               std::to_string(kMaxAxisValues) + " are allowed");
    }
    for (const auto& e : value) {
      if (!e.IsScalar()) {
        Fail(Line(e), error_key, "entries must be single values, not lists or maps");
      }
      values.push_back({ScalarToJson(e, error_key), Line(e)});
    }
    return values;
  }

  void AddAxis(const std::vector<std::string>& paths, const std::vector<std::string>& keys,
               const std::vector<std::vector<WrittenValue>>& columns, int line) {
    if (grid_.axes.size() >= kMaxAxes) {
      Fail(line, keys.front(),
           "is one axis too many: a grid has at most " + std::to_string(kMaxAxes));
    }
    for (size_t k = 0; k < paths.size(); ++k) {
      // The same field twice would silently fight; refuse.
      if (std::optional<std::string> other = GridKeyOf(paths[k])) {
        Fail(line, keys[k], "sets " + paths[k] + ", which " + *other + " sets too");
      }
      for (size_t j = 0; j < k; ++j) {
        if (paths[j] == paths[k]) {
          Fail(line, keys[k], "sets " + paths[k] + ", as " + keys[j] + " does");
        }
      }
      if (auto it = key_lines_.find(paths[k]); it != key_lines_.end()) {
        Fail(it->second, paths[k],
             "is also set by " + keys[k] + " (line " + std::to_string(line) +
                 "); set it in one place");
      }
    }
    GridAxis axis;
    AxisSource source;
    axis.paths = paths;
    source.keys = keys;
    source.line = line;
    for (size_t step = 0; step < columns.front().size(); ++step) {
      std::vector<json> values;
      std::vector<int> lines;
      for (const std::vector<WrittenValue>& column : columns) {
        values.push_back(column[step].value);
        lines.push_back(column[step].line);
      }
      axis.values.push_back(std::move(values));
      source.lines.push_back(std::move(lines));
    }
    grid_.axes.push_back(std::move(axis));
    axis_sources_.push_back(std::move(source));
  }

  // The grid key ("grid.arch (line 7)") that sets `path`, if one does.
  std::optional<std::string> GridKeyOf(const std::string& path) const {
    std::optional<std::pair<int, int>> at = grid_.Find(path);
    if (!at) return std::nullopt;
    const AxisSource& source = axis_sources_[at->first];
    return source.keys[at->second] + " (line " + std::to_string(source.line) + ")";
  }

  // The field a key names: a named axis ("arch") or a field path ("train.lr"). `prefix` makes
  // the key of an error ("grid.").
  std::string FieldOfKey(const std::string& key, int line, const std::string& prefix) const {
    if (const NamedAxis* a = FindNamedAxis(key)) return a->path;
    const bool in_grid = prefix.rfind("grid.", 0) == 0;
    const std::vector<std::string>& fields = model::CellConfigFields();
    if (key.find('.') == std::string::npos) {
      Fail(line, prefix + key,
           std::string(in_grid ? "unknown axis" : "unknown field") + SuggestField(key, in_grid));
    }
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) {
      const std::string near = base::DidYouMean(key, fields);
      Fail(line, prefix + key,
           "unknown field" + (near.empty() ? " (fields are section.key as listed in "
                                             "model/config/cell_config.h, e.g. train.lr)"
                                           : near));
    }
    return key;
  }

  // The field a key of `exclude` or a `by` names; it must be set by an axis.
  std::string AxisFieldOfKey(const std::string& key, int line, const std::string& error_key) const {
    const NamedAxis* named = FindNamedAxis(key);
    const std::string path = named ? named->path : key;
    if (grid_.Find(path)) return path;
    std::vector<std::string> written;
    for (const AxisSource& s : axis_sources_) {
      for (const std::string& k : s.keys) {
        written.push_back(k.substr(k.rfind("grid.zip.", 0) == 0 ? 9 : 5));
      }
    }
    Fail(line, error_key, key + " is not a grid axis" + base::DidYouMean(key, written));
  }

  // A value of the axis that sets `path`, as written at `node`, else an error naming the
  // closest value.
  json ValueOnAxis(const std::string& path, const std::string& key, const YAML::Node& node,
                   const std::string& error_key) const {
    if (!node.IsScalar()) Fail(Line(node), error_key, key + " values must be single values");
    const json v = ScalarToJson(node, error_key);
    const auto [a, k] = *grid_.Find(path);
    std::vector<std::string> shown;
    for (const std::vector<json>& step : grid_.axes[a].values) {
      if (SameValue(step[k], v)) return v;
      shown.push_back(DisplayValue(step[k]));
    }
    Fail(Line(node), error_key,
         key + " '" + node.Scalar() + "' is not a value of " + axis_sources_[a].keys[k] +
             base::DidYouMean(node.Scalar(), shown));
  }

  // ----- depends ------------------------------------------------------------------------------

  // depends: {FIELD: {by: AXIS, values: {AXIS VALUE: FIELD VALUE, ...}, default: VALUE}}
  void ParseDepends(const YAML::Node& node) {
    const int depends_line = key_lines_["depends"];
    if (node.IsNull()) return;
    if (!node.IsMap()) {
      Fail(depends_line, "depends",
           "must be a mapping of fields to {by: AXIS, values: {...}, default: VALUE}");
    }
    CheckDuplicateKeys(node, "depends");
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      const int line = Line(kv.first);
      const std::string error_key = "depends." + key;
      const std::string path = FieldOfKey(key, line, "depends.");
      if (std::optional<std::string> other = GridKeyOf(path)) {
        Fail(line, error_key, "is also set by " + *other + "; set it in one place");
      }
      if (auto it = key_lines_.find(path); it != key_lines_.end()) {
        Fail(it->second, path,
             "is also set by " + error_key + " (line " + std::to_string(line) +
                 "); set it in one place");
      }
      for (const DependentField& d : grid_.depends) {
        if (d.path == path) Fail(line, error_key, "sets " + path + " a second time");
      }
      ParseDependent(path, kv.second, line, error_key);
    }
  }

  void ParseDependent(const std::string& path, const YAML::Node& entry, int line,
                      const std::string& error_key) {
    if (!entry.IsMap()) {
      Fail(line, error_key, "must be a mapping {by: AXIS, values: {...}, default: VALUE}");
    }
    CheckDuplicateKeys(entry, error_key);
    static const std::vector<std::string> kKeys = {"by", "values", "default"};
    for (const auto& kv : entry) {
      const std::string k = kv.first.Scalar();
      if (std::find(kKeys.begin(), kKeys.end(), k) == kKeys.end()) {
        const std::string near = base::DidYouMean(k, kKeys);
        Fail(Line(kv.first), error_key + "." + k,
             "unknown key" + (near.empty() ? " (expected by, values, default)" : near));
      }
    }
    DependentField dep;
    DependentSource source;
    dep.path = path;
    source.key = error_key;
    source.line = line;
    const YAML::Node by = entry["by"];
    if (!by || by.IsNull()) Fail(line, error_key, "needs by: the grid axis it depends on");
    if (!by.IsScalar()) Fail(Line(by), error_key + ".by", "must name one grid axis");
    dep.by = AxisFieldOfKey(by.Scalar(), Line(by), error_key);
    const YAML::Node values = entry["values"];
    if (!values || !values.IsMap() || values.size() == 0) {
      Fail(values ? Line(values) : line, error_key,
           "needs values: a mapping from values of " + by.Scalar() + " to values of " + path);
    }
    CheckDuplicateKeys(values, error_key + ".values");
    std::map<std::string, int> unused_lines;
    for (const auto& kv : values) {
      json when = ValueOnAxis(dep.by, by.Scalar(), kv.first, error_key);
      for (const auto& [seen, value] : dep.values) {
        if (SameValue(seen, when)) {
          Fail(Line(kv.first), error_key,
               by.Scalar() + " '" + kv.first.Scalar() + "' is listed twice");
        }
      }
      dep.values.emplace_back(when, ToJson(kv.second, error_key, &unused_lines));
      source.value_lines.push_back(Line(kv.second));
    }
    if (const YAML::Node fallback = entry["default"]) {
      dep.fallback = ToJson(fallback, error_key, &unused_lines);
      source.default_line = Line(fallback);
    }
    grid_.depends.push_back(std::move(dep));
    depend_sources_.push_back(std::move(source));
  }

  // ----- exclude ------------------------------------------------------------------------------

  // exclude: a list of rules {AXIS: VALUE or [VALUES], ...}; a rule drops the points where every
  // axis it names has one of its values.
  void ParseExclude(const YAML::Node& node) {
    const int exclude_line = key_lines_["exclude"];
    if (node.IsNull()) return;
    if (!node.IsSequence()) {
      Fail(exclude_line, "exclude", "must be a list of rules, e.g. - {arch: full, pos: nope}");
    }
    if (node.size() > kMaxExcludeRules) {
      Fail(exclude_line, "exclude",
           "lists " + std::to_string(node.size()) + " rules; at most " +
               std::to_string(kMaxExcludeRules) + " are allowed");
    }
    for (const auto& rule_node : node) {
      const int line = Line(rule_node);
      if (!rule_node.IsMap() || rule_node.size() == 0) {
        Fail(line, "exclude", "each rule must be a mapping of axes to values, e.g. {arch: full}");
      }
      CheckDuplicateKeys(rule_node, "exclude");
      ExcludeRule rule;
      for (const auto& kv : rule_node) {
        const std::string key = kv.first.Scalar();
        const std::string path = AxisFieldOfKey(key, Line(kv.first), "exclude");
        for (const auto& [seen, unused] : rule.fields) {
          if (seen == path) Fail(Line(kv.first), "exclude", "a rule names " + path + " twice");
        }
        std::vector<json> values;
        if (kv.second.IsSequence()) {
          if (kv.second.size() == 0) Fail(Line(kv.first), "exclude", key + " lists no value");
          for (const auto& v : kv.second) values.push_back(ValueOnAxis(path, key, v, "exclude"));
        } else {
          values.push_back(ValueOnAxis(path, key, kv.second, "exclude"));
        }
        rule.fields.emplace_back(path, std::move(values));
      }
      grid_.exclude.push_back(std::move(rule));
      exclude_lines_.push_back(line);
    }
  }

  // Every rule must drop something (else it is a typo or a zip mismatch) and some point must
  // remain.
  void CheckExclusion() const {
    if (grid_.exclude.empty()) return;
    std::vector<int64_t> matched(grid_.exclude.size(), 0);
    int64_t kept = 0;
    for (const GridPoint& p : CartesianProduct(grid_)) {
      bool dropped = false;
      for (size_t r = 0; r < grid_.exclude.size(); ++r) {
        if (RuleMatches(grid_, r, p)) {
          ++matched[r];
          dropped = true;
        }
      }
      kept += dropped ? 0 : 1;
    }
    for (size_t r = 0; r < matched.size(); ++r) {
      if (matched[r] == 0) {
        Fail(exclude_lines_[r], "exclude",
             "this rule matches no grid point (its values never occur together)");
      }
    }
    if (kept == 0) Fail(key_lines_.at("exclude"), "exclude", "drops every grid point");
  }

  // ----- cells --------------------------------------------------------------------------------

  // What the grid says of `path` (model/config/study_defaults.h): whether an axis or a dependent
  // field sets it, and every value it takes there.
  model::FieldAcrossStudy FieldOnGrid(const std::string& path) const {
    model::FieldAcrossStudy field;
    if (std::optional<std::pair<int, int>> at = grid_.Find(path)) {
      field.set_by_grid = true;
      for (const std::vector<json>& step : grid_.axes[at->first].values) {
        field.values.push_back(step[at->second]);
      }
    }
    for (const DependentField& d : grid_.depends) {
      if (d.path != path) continue;
      field.set_by_grid = true;
      for (const auto& [when, value] : d.values) field.values.push_back(value);
      if (d.fallback) field.values.push_back(*d.fallback);
    }
    return field;
  }

  // Token files named relative to the study file resolve against its directory.
  void ResolveDataPaths(json* cell) const {
    if (base_dir_.empty() || !cell->contains("data") || !(*cell)["data"].is_object()) return;
    for (const char* key : {"path", "heldout_path"}) {
      json& v = (*cell)["data"][key];
      if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>()[0] != '/') {
        v = base_dir_ + "/" + v.get<std::string>();
      } else if (v.is_null()) {
        (*cell)["data"].erase(key);
      }
    }
  }

  static bool IsSection(const std::string& key) {
    for (const char* s : kSections) {
      if (key == s) return true;
    }
    return false;
  }

  // train.share_trunk: how the study runs (a WSD study's budgets from one trunk, or each on
  // its own), not what its cells are, so it is taken out of the cells' config.
  void ReadShareTrunk(json* base, StudySpec* spec) {
    if (!base->contains("train") || !(*base)["train"].contains("share_trunk")) return;
    json& train = (*base)["train"];
    const int line = key_lines_["train.share_trunk"];
    if (!train["share_trunk"].is_boolean()) {
      Fail(line, "train.share_trunk", "must be true or false, got " + train["share_trunk"].dump());
    }
    spec->share_trunk = train["share_trunk"].get<bool>();
    spec->share_trunk_line = line;
    train.erase("share_trunk");
  }

  // resources: {devices: N}; returns N (1 when not given).
  static int ParseResources(const YAML::Node& value, int line) {
    if (value.IsNull()) return 1;
    if (!value.IsMap()) Fail(line, "resources", "must be a mapping, e.g. {devices: 2}");
    CheckDuplicateKeys(value, "resources");
    int devices = 1;
    for (const auto& kv : value) {
      const std::string key = kv.first.Scalar();
      const int key_line = Line(kv.first);
      if (key != "devices") {
        const std::string near = base::DidYouMean(key, {"devices"});
        Fail(key_line, "resources." + key,
             "unknown key" + (near.empty() ? " (expected devices)" : near));
      }
      const std::string range =
          "must be a whole number of devices from 1 to " + std::to_string(kMaxCellDevices);
      if (!kv.second.IsScalar()) Fail(key_line, "resources.devices", range);
      const json n = ScalarToJson(kv.second, "resources.devices");
      if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxCellDevices) {
        Fail(key_line, "resources.devices", range + ", got '" + kv.second.Scalar() + "'");
      }
      devices = static_cast<int>(n.get<int64_t>());
    }
    return devices;
  }

  static std::vector<std::string> ParseTags(const YAML::Node& value, int line) {
    if (value.IsNull()) return {};
    if (!value.IsSequence()) Fail(line, "tags", "must be a list of strings, e.g. [ablation, gpu]");
    static const std::regex kTag(R"([A-Za-z0-9][A-Za-z0-9_.:/-]*)");
    std::vector<std::string> tags;
    for (const YAML::Node& item : value) {
      const int at = Line(item) > 0 ? Line(item) : line;
      if (!item.IsScalar() || item.Scalar().empty()) {
        Fail(at, "tags", "every tag must be a non-empty string");
      }
      const std::string& tag = item.Scalar();
      if (tag.size() > kMaxTagLength) {
        Fail(at, "tags",
             "a tag is " + std::to_string(tag.size()) + " characters long; at most " +
                 std::to_string(kMaxTagLength) + " are allowed");
      }
      if (!std::regex_match(tag, kTag)) {
        const bool printable = std::none_of(tag.begin(), tag.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        });
        Fail(at, "tags",
             (printable ? "'" + tag + "' " : std::string("a tag ")) +
                 "may use only letters, digits, '_', '.', ':', '/' and '-', starting with a "
                 "letter or a digit");
      }
      tags.push_back(tag);
    }
    std::sort(tags.begin(), tags.end());
    tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
    if (tags.size() > static_cast<size_t>(kMaxTags)) {
      Fail(line, "tags",
           std::to_string(tags.size()) + " tags; at most " + std::to_string(kMaxTags) +
               " are allowed");
    }
    return tags;
  }

  static std::string ParseName(const YAML::Node& value, int line) {
    if (!value.IsScalar() || value.Scalar().empty())
      Fail(line, "name", "must be a non-empty string");
    const std::string& name = value.Scalar();
    // The name is a directory under onsetd's --checkpoint-root: one safe path component.
    static const std::regex kName(R"([A-Za-z0-9_.-]+)");
    if (!std::regex_match(name, kName)) {
      // Control characters are not echoed: they would garble the message.
      const bool printable = std::none_of(name.begin(), name.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      });
      Fail(line, "name",
           (printable ? "'" + name + "' " : std::string()) +
               "may use only letters, digits, '_', '.' and '-'");
    }
    if (!std::isalnum(static_cast<unsigned char>(name[0]))) {
      Fail(line, "name", "'" + name + "' must start with a letter or a digit");
    }
    if (name.size() > kMaxNameLength) {
      Fail(line, "name",
           "is " + std::to_string(name.size()) + " characters long; at most " +
               std::to_string(kMaxNameLength) + " are allowed");
    }
    return name;
  }

  // A cell's error, located (Locate), and the cell it is about by its grid point, e.g.
  // "s.yaml:7: grid.train.lr: must be ... (value 20); cell arch=full window=16 train.lr=20".
  std::string Describe(const model::FieldError& e, const GridPoint& p) const {
    std::string cell;
    for (size_t a = 0; a < grid_.axes.size(); ++a) {
      for (size_t k = 0; k < grid_.axes[a].paths.size(); ++k) {
        const std::string& key = axis_sources_[a].keys[k];
        cell += " " + key.substr(key.rfind("grid.zip.", 0) == 0 ? 9 : 5) + "=" +
                Clip(DisplayValue(grid_.axes[a].values[p[a]][k]));
      }
    }
    return Locate(e, p) + (cell.empty() ? "" : "; cell" + cell);
  }

  // Locates a cell-config error: the grid entry or dependent value that set the field; else the
  // key in the file; else, for fields the arch decides, the arch entry; else the section; else
  // line 1.
  std::string Locate(const model::FieldError& e, const GridPoint& p) const {
    StudyError out{1, e.path, e.message};
    if (std::optional<std::pair<int, int>> at = grid_.Find(e.path)) {
      const auto [a, k] = *at;
      out.line = axis_sources_[a].lines[p[a]][k];
      out.key = axis_sources_[a].keys[k];
      out.message += " (value " + Clip(grid_.axes[a].values[p[a]][k].dump()) + ")";
      return Format(out);
    }
    for (size_t d = 0; d < grid_.depends.size(); ++d) {
      const DependentField& dep = grid_.depends[d];
      if (dep.path != e.path) continue;
      const DependentSource& source = depend_sources_[d];
      out.key = source.key;
      out.line = source.line;
      if (std::optional<int> choice = DependentChoice(grid_, d, p)) {
        out.line = *choice < 0 ? source.default_line : source.value_lines[*choice];
        const json& v = *choice < 0 ? *dep.fallback : dep.values[*choice].second;
        out.message += " (value " + Clip(v.dump()) + ")";
      }
      return Format(out);
    }
    if (auto it = key_lines_.find(e.path); it != key_lines_.end()) {
      out.line = it->second;
      return Format(out);
    }
    const std::optional<std::pair<int, int>> arch = grid_.Find("model.arch");
    if ((e.path == "model.window" || e.path == "model.pattern") && arch) {
      const auto [a, k] = *arch;
      out.line = axis_sources_[a].lines[p[a]][k];
      out.message += " (for arch " + grid_.axes[a].values[p[a]][k].dump() + ")";
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
  Grid grid_;
  std::vector<AxisSource> axis_sources_;         // parallel to grid_.axes
  std::vector<DependentSource> depend_sources_;  // parallel to grid_.depends
  std::vector<int> exclude_lines_;               // parallel to grid_.exclude
};

}  // namespace

absl::StatusOr<StudySpec> ParseStudyFile(const std::string& source_name, const std::string& text,
                                         const std::string& base_dir) {
  StudyParser parser(source_name, base_dir);
  try {
    return parser.Parse(text);
  } catch (const StudyError& e) {
    return absl::InvalidArgumentError(parser.Format(e));
  } catch (const YAML::Exception& e) {
    // yaml-cpp may throw on malformed input while we walk nodes.
    return absl::InvalidArgumentError(source_name + ":" + std::to_string(e.mark.line + 1) +
                                      ": invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    // Whatever else a library throws on some input is still that file's problem, never the
    // caller's: the RPC answers it as bad input and onsetd keeps serving.
    return absl::InvalidArgumentError(source_name + ": cannot read this study file: " + e.what());
  }
}

}  // namespace onset::coordinator
