// Grid expansion: a study's base config times its axes gives cells, each content-addressed by
// the hash of its canonical resolved config, so equal cells collapse into one (e.g. a `window`
// axis does not multiply cells without sliding-window layers: their canonical window is 0).
//
// A grid is a list of axes. An axis sets one cell-config field per step, or several at once (a
// zip group: its fields vary together, step by step). The points are the cartesian product of
// the axes, the first axis outermost, minus the points an exclusion rule matches. Dependent
// fields take, at each point, the value listed for the value another field has there.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/config/cell_config.h"
#include "proto/cell_role.h"

namespace onset::coordinator {

// The axes a study file names by a short key, and the fields they set.
struct NamedAxis {
  const char* key;      // in a study file's `grid`: "seeds", "tokens", "arch", "window", "pos"
  const char* path;     // the field: "train.seed", "train.tokens", "model.arch", ...
  const char* display;  // in CellSpec::axes: "seed", "tokens", "arch", "window", "pos"
};
inline constexpr std::array<NamedAxis, 5> kNamedAxes = {{
    {"seeds", "train.seed", "seed"},
    {"tokens", "train.tokens", "tokens"},
    {"arch", "model.arch", "arch"},
    {"window", "model.window", "window"},
    {"pos", "model.pos", "pos"},
}};
// The named axis with this grid key or field path, if any.
const NamedAxis* FindNamedAxis(const std::string& key_or_path);

inline constexpr int kMaxGridPoints = 100'000;

// Whether two written values name the same value of a field: equal as JSON (1e-3 and 0.001, 64
// and 64.0), or the same token count ("1M", "1000K" and 1000000).
bool SameValue(const nlohmann::json& a, const nlohmann::json& b);

// One dimension of the product.
struct GridAxis {
  std::vector<std::string> paths;                   // the fields it sets (several: a zip group)
  std::vector<std::vector<nlohmann::json>> values;  // values[step][k] is the value of paths[k]
};

// A field whose value, at each point, is chosen by the value of another field (`by`, set by
// an axis): the first entry whose key is SameValue as it, else `fallback`.
struct DependentField {
  std::string path;
  std::string by;
  std::vector<std::pair<nlohmann::json, nlohmann::json>> values;  // (by's value, path's value)
  std::optional<nlohmann::json> fallback;
};

// Matches a point where every listed field (set by an axis) has one of its listed values.
struct ExcludeRule {
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> fields;
};

struct Grid {
  std::vector<GridAxis> axes;  // outermost first
  std::vector<ExcludeRule> exclude;
  std::vector<DependentField> depends;

  // Points of the product before exclusion (no axes: one point; an empty axis: none);
  // saturates at INT64_MAX.
  int64_t Size() const;
  // The axis and column that set `path`, if one does.
  std::optional<std::pair<int, int>> Find(const std::string& path) const;
};

// One grid point: a step of each axis.
using GridPoint = std::vector<int>;

// The cartesian product, first axis outermost, exclusion not applied. The caller checks Size()
// against kMaxGridPoints.
std::vector<GridPoint> CartesianProduct(const Grid& grid);

// The value the axes give `path` at `p`; null when no axis sets it.
const nlohmann::json* AxisValue(const Grid& grid, const GridPoint& p, const std::string& path);
// Whether grid.exclude[rule] matches `p`.
bool RuleMatches(const Grid& grid, size_t rule, const GridPoint& p);
// The first exclusion rule that matches `p`, or -1.
int MatchingExcludeRule(const Grid& grid, const GridPoint& p);
// The entry of grid.depends[d] chosen at `p`: an index into its values, -1 for the fallback,
// nullopt when neither applies.
std::optional<int> DependentChoice(const Grid& grid, size_t d, const GridPoint& p);

// How a value of a study file is shown (in axes, errors and notes): a string as it is, anything
// else as its JSON.
std::string DisplayValue(const nlohmann::json& v);

// `base` (a cell config JSON object) with the point's axis values and dependent values placed
// at their paths. A dependent field with no value for the point is left to `base`.
nlohmann::json CellJson(const nlohmann::json& base, const Grid& grid, const GridPoint& p);

// How a stored cell runs (docs/wsd-trunks.md). kCell: on its own. kBranch: a WSD budget that
// starts from its trunk's checkpoint at branch_tokens and trains only its decay; it is the same
// cell (id, config, metrics) as the run on its own would be. kTrunk: the shared stable phase of
// its branches, a job and not a grid point: its config_json is a trunk spec
// (model/config/wsd_trunk.h), its tokens_budget where it stops.
// The names stored and shown are the wire's (proto/cell_names.h).
using CellRole = wire::CellRole;

// A cell ready to store.
struct CellSpec {
  std::string id;  // CellId of the config
  // For display: arch, window ("-" without S layers), pos, tokens (integer) and seed always,
  // plus every other field the grid varies, by its dotted path ("train.lr"), as resolved.
  std::map<std::string, std::string> axes;
  // Other values that grid points gave these display axes and that expanded to this same cell,
  // as displayed, in expansion order: the grid merged them into it. E.g. arch=full with
  // pos=nope-full trains what pos=nope trains (model/config/cell_config.cc), so that cell, shown as
  // pos nope, has {pos: [nope-full]}; a full-attention cell expanded with windows 16 and 64 has
  // {window: [16, 64]}. Values that only spell the cell's own differently (1M for 1000000) are
  // not aliases.
  std::map<std::string, std::vector<std::string>> axis_aliases;
  std::string config_json;  // canonical resolved config (CanonicalText)
  int64_t tokens_budget = 0;
  // The model's size and training cost (model/config/flops.h), computed once at expansion and
  // stored with the cell, so that reading a cell never parses its config.
  int64_t non_embedding_params = 0;
  double train_flops_per_token = 0;
  CellRole role = CellRole::kCell;
  std::string trunk_id;       // kBranch: its trunk's id
  int64_t branch_tokens = 0;  // kBranch: the trunk checkpoint it starts from, tokens
};

// The longest sequence a cell's model sees: model.seq_len, or its longest NIAH prompt when it
// runs NIAH.
int LongestContext(const model::CellConfig& config);

// What a submission checks of every distinct cell besides ParseCellConfig: that onset-train
// accepts its canonical config (`canonical_text`, config.CanonicalText(); checked by
// model::ValidateCanonical, the trainer's own code), and that a sliding window is shorter than
// LongestContext (else the S layers are F layers under another name). An error on the field's
// path.
std::optional<model::FieldError> CheckSubmittedCell(const model::CellConfig& config,
                                                    const std::string& canonical_text);

// base::CellIdOf(config.CanonicalText()): the id the exported weights carry too.
std::string CellId(const model::CellConfig& config);
// `extra_axes`: dotted paths shown besides the five named axes (their canonical values).
CellSpec MakeCellSpec(const model::CellConfig& config,
                      const std::vector<std::string>& extra_axes = {});

// Turns a field error of the cell at a grid point into a message (e.g. with a file and line).
using ErrorDescriber = std::function<std::string(const model::FieldError&, const GridPoint&)>;
// Adjusts a cell's JSON before it is validated (e.g. resolves relative file paths).
using CellAdjuster = std::function<void(nlohmann::json*)>;

// Expands the points that no rule excludes, validates each cell (model::ParseCellConfig, and
// CheckSubmittedCell once per distinct cell) and deduplicates by id, keeping the first occurrence,
// in expansion order, with the axis values of the points it absorbed recorded as its axis_aliases.
// Every field an axis or a dependent sets is a display axis of every cell. Errors: InvalidArgument
// with the first bad cell's message, made by `describe` (FieldError::ToString() when null); a
// dependent field without a value at a point is such an error, on its path; a grid over
// kMaxGridPoints.
absl::StatusOr<std::vector<CellSpec>> ExpandGrid(const nlohmann::json& base, const Grid& grid,
                                                 const ErrorDescriber& describe = nullptr,
                                                 const CellAdjuster& adjust = nullptr);

}  // namespace onset::coordinator
