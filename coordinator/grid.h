// Grid expansion: a study's base config times its axes gives cells, each content-addressed by
// the hash of its canonical resolved config, so equal cells collapse into one (e.g. a `window`
// axis does not multiply cells without sliding-window layers: their canonical window is 0).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "model/cell_config.h"

namespace onset::coordinator {

// The axes in expansion order, outermost first: every seed-0 cell is queued before any seed-1
// cell, and smaller budgets (as listed) before larger ones, so a study shows a first complete
// picture early.
enum class Axis { kSeed = 0, kTokens, kArch, kWindow, kPos };
inline constexpr int kNumAxes = 5;
inline constexpr std::array<Axis, kNumAxes> kAllAxes = {Axis::kSeed, Axis::kTokens, Axis::kArch,
                                                        Axis::kWindow, Axis::kPos};
inline constexpr int kMaxGridPoints = 100'000;

// The key of an axis in a study file's `grid` ("seeds", "tokens", "arch", "window", "pos").
const char* GridKey(Axis axis);
// The cell-config field an axis sets ("train.seed", "train.tokens", "model.arch", ...).
const char* FieldPath(Axis axis);
// The axis that sets a cell-config field, if any.
std::optional<Axis> AxisForField(const std::string& path);

struct GridAxes {
  // JSON scalars per axis; an empty axis is not varied (the base config decides).
  std::array<std::vector<nlohmann::json>, kNumAxes> values;

  std::vector<nlohmann::json>& operator[](Axis a) { return values[static_cast<int>(a)]; }
  const std::vector<nlohmann::json>& operator[](Axis a) const {
    return values[static_cast<int>(a)];
  }
  // Number of points of the product (an empty axis counts as 1); saturates at INT64_MAX.
  int64_t Size() const;
};

// One grid point: an index into each axis, -1 for an axis that is not varied.
using GridPoint = std::array<int, kNumAxes>;

// The cartesian product in expansion order. The caller checks Size() against kMaxGridPoints.
std::vector<GridPoint> CartesianProduct(const GridAxes& axes);

// `base` (a cell config JSON object) with the point's values placed at FieldPath(axis).
nlohmann::json CellJson(const nlohmann::json& base, const GridAxes& axes, const GridPoint& p);

// A cell ready to store.
struct CellSpec {
  std::string id;                           // CellId of the config
  std::map<std::string, std::string> axes;  // arch, window ("-" without S layers), pos,
                                            // tokens (integer), seed: for display
  std::string config_json;                  // canonical resolved config (CanonicalText)
  int64_t tokens_budget = 0;
};

// The first 16 hex digits of SHA-256(config.CanonicalText()).
std::string CellId(const model::CellConfig& config);
CellSpec MakeCellSpec(const model::CellConfig& config);

// Turns a field error of the cell at a grid point into a message (e.g. with a file and line).
using ErrorDescriber = std::function<std::string(const model::FieldError&, const GridPoint&)>;

// Expands, validates (model::ParseCellConfig) and deduplicates by id, keeping the first
// occurrence, in expansion order. Errors: InvalidArgument with the first bad cell's message,
// made by `describe` (FieldError::ToString() when null), or for a grid over kMaxGridPoints.
absl::StatusOr<std::vector<CellSpec>> ExpandGrid(const nlohmann::json& base,
                                                 const GridAxes& axes,
                                                 const ErrorDescriber& describe = nullptr);

}  // namespace onset::coordinator
