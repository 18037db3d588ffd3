// How a cell reads in MLflow (docs/mlflow.md): its metric names as MLflow allows them, its axes
// and config as params, its state as a run status.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {

// MLflow's names allow letters, digits and _ - . / space (and : but not on Windows, so not
// here): '@' becomes "_at_" ("niah/acc@512" -> "niah/acc_at_512"), any other character '_'.
// A name that MLflow would read as another path ("a//b", "/a", "a/") has its '/' as '_' too.
std::string MlflowName(const std::string& name);

// The run's params: each axis by its name, and every leaf of the canonical config as
// "config.SECTION.KEY" (arrays and objects as their JSON text), names as MlflowName gives them,
// values of at most 6000 bytes (MLflow's limit; a longer one is cut and ends in "..."). A
// config that is not JSON gives the axes alone.
std::vector<std::pair<std::string, std::string>> MlflowParams(
    const std::map<std::string, std::string>& axes, const std::string& config_json);

// The run status of a cell's state: RUNNING while it may still run (queued, running, backing
// off), FINISHED (succeeded), FAILED (failed, diverged), KILLED (cancelled).
const char* MlflowRunStatus(CellState state);

}  // namespace onset::coordinator
