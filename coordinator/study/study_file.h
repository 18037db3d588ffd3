// Study files: the YAML a person writes to define a grid of cells.
//
//   name: swa-window-sweep          # required, [A-Za-z0-9_.-], a letter or digit first, <= 64
//   description: Large-Window Laziness at small scale
//   model: {layers: 4}               # cell config sections (model/config/cell_config.h): the base
//   train: {batch_tokens: 8K}        # of every cell
//   data: {}
//   eval: {niah_samples: 8}
//   grid:                            # each axis a list or a single value
//     arch: [full, swa]              # -> model.arch
//     window: [32, 128]              # -> model.window
//     pos: [rope, nope-full]         # -> model.pos
//     tokens: [250K, 1M]             # -> train.tokens
//     seeds: 2                       # -> train.seed; an integer N means 0..N-1
//     train.weight_decay: [0, 0.1]   # any cell-config field, by its dotted path
//     zip:                           # axes that vary together, step by step (equal lengths):
//       - {model.d_model: [64, 128], model.heads: [2, 4]}    # one axis of pairs
//   exclude:                         # points to drop: a rule matches a point where every
//     - {arch: full, pos: nope-full} # axis it names has (one of) its value(s)
//     - {window: 128, tokens: [250K]}
//   depends:                         # a field whose value follows another axis' value
//     train.lr: {by: arch, values: {full: 3e-3, swa: 1e-3}, default: 2e-3}
//   resources: {devices: 2}          # devices each attempt runs on (data-parallel ranks), 1 to
//                                    # kMaxCellDevices; how a cell is run, not what it is: not
//                                    # part of its content address
//
// `train.share_trunk: false` makes a WSD study train each budget on its own instead of branching
// them off one trunk (trunk_plan.h); `true` refuses the file when its budgets cannot share. How
// cells run, not what they are: it is taken out of the cells' config.
//
// Axes expand seeds outermost, then tokens, then the rest in file order (a zip group counts as
// one axis). Every grid, zip, exclude and depends key is a named axis (arch, window, pos,
// tokens, seeds) or a field path (section.key); unknown ones are errors with the closest known
// name. A field is set in one place only: a section, one axis, or one `depends` entry. Values
// named by `exclude` and `depends` must be values of their axes; each rule must match a point
// and some point must remain; a dependent field needs a value (listed or `default`) at every
// point that remains. Cells are validated by model::ParseCellConfig (value ranges) and shown
// with every field the grid varies besides the five named axes (CellSpec::axes).
// Every distinct cell is also checked as onset-train reads it (CheckSubmittedCell: the canonical
// config through the trainer's ParseCellConfig, and a window shorter than the longest context).
// Limits (docs/study-files.md, "Limits of a study file"): common::kMaxStudyFileBytes of UTF-8 text,
// one YAML document, nesting 16 deep, no anchors or aliases (refused from the event stream before
// anything expands), numbers that fit a double or an int64 (no overflow, no underflow to 0 or
// to a denormal), a name of at most 64 characters that starts with a letter or digit (it is a
// directory name), 32 axes, 10,000 values per axis (and seeds), 100 exclude rules,
// kMaxGridPoints points before exclusion.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/study/grid.h"

namespace onset::coordinator {

// Devices one cell may ask for at most.
inline constexpr int kMaxCellDevices = 64;

// A study's tags (`tags: [a, b]`): at most kMaxTags, each 1..kMaxTagLength letters, digits and
// '_', '.', '-', ':', '/', starting with a letter or digit; stored sorted, without duplicates.
inline constexpr int kMaxTags = 32;
inline constexpr size_t kMaxTagLength = 64;
// A study's description: at most this many bytes of UTF-8.
inline constexpr size_t kMaxDescriptionLength = 4096;

struct StudySpec {
  std::string name;
  std::string description;
  std::vector<std::string> tags;  // sorted, distinct
  std::string source_name;        // as given, used in messages
  std::string source_yaml;        // the text, stored verbatim
  std::vector<CellSpec> cells;    // deduplicated, in expansion order
  int devices = 1;                // resources.devices: devices each attempt of its cells needs
  // train.share_trunk: whether a WSD study's budgets share a trunk (trunk_plan.h); unset =
  // wherever they can. Not part of any cell's config.
  std::optional<bool> share_trunk;
  int share_trunk_line = 0;  // its line in the file, for messages
};

// Parses and expands a study file. Pure: reads no files, writes nothing. Relative token-file
// paths (data.path, data.heldout_path) are joined to `base_dir` when it is given, so cells name
// the files wherever the workers run.
// Errors: InvalidArgument with "SOURCE:LINE: KEY: problem", e.g.
// "studies/x.yaml:12: train.lr: must be a number". For a problem that comes from a grid value
// the line is that grid entry's and the key is the grid key (e.g. "grid.window").
absl::StatusOr<StudySpec> ParseStudyFile(const std::string& source_name, const std::string& text,
                                         const std::string& base_dir = "");

}  // namespace onset::coordinator
