// onset-train's command line and config loading. Torch-free and hand-parsed: the trainer must
// build on a GPU node with nothing but LibTorch.
//
//   onset-train --config FILE.json [--metrics-fd N] [--device auto|cpu|cuda] [--threads N]
//               [--checkpoint-dir DIR] [--resume]
#pragma once

#include <optional>
#include <string>

#include "model/cell_config.h"

namespace onset::model {

struct TrainFlags {
  std::string config_path;         // required
  int metrics_fd = 1;              // JSON lines go here; stdout by default
  std::string device = "auto";     // auto = CUDA when available, else CPU
  std::optional<int> threads;      // overrides train.threads when given
  std::string checkpoint_dir = "checkpoints";  // relative to the working directory
  bool resume = false;             // continue from the newest valid checkpoint, if any
  bool help = false;
};

inline constexpr const char* kTrainUsage =
    "usage: onset-train --config FILE.json [--metrics-fd N] [--device auto|cpu|cuda] "
    "[--threads N] [--checkpoint-dir DIR] [--resume]";

// Accepts "--flag value" and "--flag=value". Returns an error message naming the flag.
// One command-line argument split as "--name=value" (has_value) or a bare "--name" whose value,
// if it takes one, is the next argument.
struct FlagArg {
  std::string name;
  std::string value;
  bool has_value = false;
};
FlagArg SplitFlag(const std::string& arg);

std::optional<std::string> ParseTrainFlags(int argc, const char* const* argv, TrainFlags* out);

// Reads and parses a cell config file. Errors read "FILE: key.path: message".
std::optional<std::string> LoadCellConfig(const std::string& path, CellConfig* out);

// Constraints the trainer adds to ParseCellConfig's (e.g. NIAH lengths must fit a record).
std::optional<FieldError> ValidateForTraining(const CellConfig& config);

}  // namespace onset::model
