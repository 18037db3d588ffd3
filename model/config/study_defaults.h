// What a study gives its cells that a lone cell config does not get: the defaults that depend on
// the whole study, stated in one place beside the cell's field list (cell_config.cc, whose
// WrittenIf and WrittenAs rules say how each field is written in the canonical form, and so in
// the cell id). The study parser (coordinator/study/study_file.cc) applies them to a study's
// base config before the grid is expanded, so every cell of the study gets them alike.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace onset::model {

// What a study says of one field (a dotted path, e.g. "model.window") outside its base config:
// whether a grid axis or a dependent field sets it, and every value it can take there.
struct FieldAcrossStudy {
  bool set_by_grid = false;
  std::vector<nlohmann::json> values;
};
using StudyFieldLookup = std::function<FieldAcrossStudy(const std::string& path)>;

// Applies the study-level defaults to `base` (the study's config before the grid), each only
// where the study does not set the field itself:
//  - eval.short_context and eval.niah_window: the smallest model.window anywhere in the study
//    (base, grid or dependent field). The short-context loss and the in/beyond-window NIAH
//    buckets are defined at the study's smallest window (docs/science.md, "What the
//    measurements are for"), the same for every cell, full-attention cells included, so that
//    every cell is measured on the same split of the same samples. Without any window, each
//    cell resolves them itself (EvalConfig::resolved_short_context, resolved_niah_window).
//  - model.short_conv: true, unless the grid or a dependent field sets it. A study's L and D
//    layers carry the short convolution of the reference implementations; a lone cell config
//    without the key has none (cell_config.h), which keeps the meaning, and the ids, of every
//    cell stored before the option existed.
void ApplyStudyDefaults(nlohmann::json* base, const StudyFieldLookup& field);

}  // namespace onset::model
