// Study files: the YAML a person writes to define a grid of cells.
//
//   name: swa-window-sweep          # required, [A-Za-z0-9_.-], at most 64 characters
//   description: Large-Window Laziness at small scale
//   model: {layers: 4, d_model: 128} # cell config sections (model/cell_config.h)
//   train: {lr: 3.0e-3}
//   data: {}
//   eval: {niah_samples: 8}
//   grid:                            # each axis a list or a single value
//     arch: [full, swa]              # -> model.arch
//     window: [32, 128]              # -> model.window
//     pos: [rope, nope-full]         # -> model.pos
//     tokens: [250K, 1M]             # -> train.tokens
//     seeds: 2                       # -> train.seed; an integer N means 0..N-1
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/grid.h"

namespace onset::coordinator {

struct StudySpec {
  std::string name;
  std::string description;
  std::string source_name;  // as given, used in messages
  std::string source_yaml;  // the text, stored verbatim
  std::vector<CellSpec> cells;  // deduplicated, in expansion order
};

// Parses and expands a study file. Pure: reads no files, writes nothing. Relative token-file
// paths (data.path, data.heldout_path) are joined to `base_dir` when it is given, so cells name
// the files wherever the workers run.
// Errors: InvalidArgument with "SOURCE:LINE: KEY: problem", e.g.
// "studies/x.yaml:12: train.lr: must be a number". For a problem that comes from a grid value
// the line is that grid entry's and the key is the grid key (e.g. "grid.window").
absl::StatusOr<StudySpec> ParseStudyFile(const std::string& source_name,
                                         const std::string& text,
                                         const std::string& base_dir = "");

}  // namespace onset::coordinator
