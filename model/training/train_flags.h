// onset-train's command line and config loading. Torch-free; the flags' names are the contract
// in base/trainer_contract.h, parsed with CLI11 (vendored, so that the trainer still builds on a
// GPU node with nothing but LibTorch).
//
//   onset-train --config FILE.json [--metrics-fd N] [--device auto|cpu|cuda] [--threads N]
//               [--checkpoint-dir DIR] [--resume | --resume-from FILE ...] [--nproc N]
//               [--dist-timeout SECONDS] [--attention-backend NAME] [--branch-from FILE]
//               [--supervisor-fd N]
//
// The --config file holds a cell's config, or a WSD trunk's spec (model/config/wsd_trunk.h):
// onset-train then trains the trunk. --resume continues from the newest valid checkpoint in
// --checkpoint-dir; --resume-from (given once or more, as the worker does) from the first of
// those files it can use, writing new checkpoints into --checkpoint-dir. --branch-from FILE
// starts a WSD cell from its trunk's checkpoint FILE when it resumes nothing of its own
// (Trainer::Start). --supervisor-fd N: the process group is killed when N reports hang-up (the
// worker that started it died).
//
// --nproc N trains data-parallel on N ranks of this machine (N CUDA devices, or N CPU processes
// sharing --threads); onset-train then supervises N copies of itself (dist_launch.h). The ranks
// of a run launched otherwise (torchrun, srun) find their place in the environment
// (dist_env.h). --dist-timeout bounds how long a rank waits for the others (docs/data-parallel.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/config/cell_config.h"
#include "model/config/wsd_trunk.h"

namespace onset::model {

struct TrainFlags {
  std::string config_path;                     // required
  int metrics_fd = 1;                          // JSON lines go here; stdout by default
  std::string device = "auto";                 // auto = CUDA when available, else CPU
  std::optional<int> threads;                  // overrides train.threads when given
  std::string checkpoint_dir = "checkpoints";  // relative to the working directory
  bool resume = false;                         // continue from the newest valid checkpoint, if any
  std::vector<std::string> resume_from;        // or from the first usable of these files
  int supervisor_fd = -1;                      // killed with its group when this hangs up
  int nproc = 1;                               // ranks to start on this machine
  int dist_timeout_s = 3600;  // rendezvous and collective timeout of a data-parallel run
  std::string attention_backend = "auto";  // attention_backend.h: auto, custom, flash, ...
  std::string branch_from;                 // a WSD trunk's checkpoint file; empty = none
  bool help = false;
};

inline constexpr const char* kTrainUsage =
    "usage: onset-train --config FILE.json [--metrics-fd N] [--device auto|cpu|cuda] "
    "[--threads N] [--checkpoint-dir DIR] [--resume | --resume-from FILE ...] [--nproc N] "
    "[--dist-timeout SECONDS] [--attention-backend auto|custom|flash|sdpa-band|blocked|math|tiled] "
    "[--branch-from FILE] [--supervisor-fd N]";

// Accepts "--flag value" and "--flag=value". Returns an error message naming the flag.
std::optional<std::string> ParseTrainFlags(int argc, const char* const* argv, TrainFlags* out);

// argv[1..] without `flag` ("--nproc") and its value, either form: what each rank that
// --nproc starts is given.
std::vector<std::string> ArgsWithout(const char* flag, int argc, const char* const* argv);

// Reads and parses a cell config file. Errors read "FILE: key.path: message".
std::optional<std::string> LoadCellConfig(const std::string& path, CellConfig* out);

// Reads the --config file: a cell's config, or a WSD trunk's spec (IsTrunkSpecJson), which sets
// *trunk (and *cell to its cell); *trunk is reset otherwise. Errors read
// "FILE: key.path: message".
std::optional<std::string> LoadTrainConfig(const std::string& path, CellConfig* cell,
                                           std::optional<TrunkSpec>* trunk);

}  // namespace onset::model
