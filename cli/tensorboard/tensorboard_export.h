// `onset export STUDY --format tensorboard --out DIR`: a study's curves as TensorBoard runs.
//
// One run directory per cell, DIR/GROUP/LEAF: GROUP names the cell's axes but its seed
// ("arch=swa,pos=rope,window=16"), LEAF its seed and id ("seed=1,id=0123456789abcdef"; the id
// alone when the study has no seed axis), so that TensorBoard's run selector lists the seeds of
// one variant together and a regex on GROUP selects a variant. Each holds one event file
// (event_file.h) with every metric of the cell as scalars, step = tokens seen and wall time =
// when the point was measured (0, i.e. 1970-01-01, for a point whose time onset does not know),
// and a text summary "cell" at step 0 with the cell's study, id, axes and config.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "analysis/study_compare.h"
#include "onset/v1/onset.pb.h"

namespace onset::tensorboard {

// The file name of every run's event file: a second export into the same directory replaces it.
inline constexpr char kEventFileName[] = "events.out.tfevents.onset";

// DIR-relative run directory of `cell`, as above. Characters other than ASCII letters, digits
// and . _ - + = , @ : become '_'; each part is at most 200 bytes.
std::string RunDirectory(const v1::Cell& cell);

// Writes a run for each cell of `study` that has points in `curves` (times: `times`, which may
// be null; configs: cell id -> canonical config JSON, where known) under `out_dir` (created).
// Each file is written atomically. An error names the file that could not be written.
absl::Status WriteTensorBoard(const std::string& study_name, const v1::GetStudyResponse& study,
                              const analysis::Curves& curves, const analysis::CurveTimes* times,
                              const std::map<std::string, std::string>& configs,
                              const std::string& out_dir);

}  // namespace onset::tensorboard
