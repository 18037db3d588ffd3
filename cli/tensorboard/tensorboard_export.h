// `onset export STUDY --format tensorboard --out DIR`: a study's curves as TensorBoard runs.
//
// One run directory per cell, DIR/GROUP/LEAF (common/tensorboard/cell_run.h). Each holds one
// event file (common/tensorboard/event_file.h) with every metric of the cell as scalars, step =
// tokens seen and wall time = when the point was measured (0, i.e. 1970-01-01, for a point whose
// time onset does not know), a text summary "cell" at step 0 with the cell's study, id, axes and
// config, and the cell's hparams session (its axes).
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "analysis/study_compare.h"
#include "onset/v1/onset.pb.h"

namespace onset::tensorboard {

// The file name of every run's event file: a second export into the same directory replaces it.
inline constexpr char kEventFileName[] = "events.out.tfevents.onset";

// Writes a run for each cell of `study` that has points in `curves` (times: `times`, which may
// be null; configs: cell id -> canonical config JSON, where known) under `out_dir` (created).
// Each file is written atomically. An error names the file that could not be written.
absl::Status WriteTensorBoard(const std::string& study_name, const v1::GetStudyResponse& study,
                              const analysis::Curves& curves, const analysis::CurveTimes* times,
                              const std::map<std::string, std::string>& configs,
                              const std::string& out_dir);

}  // namespace onset::tensorboard
