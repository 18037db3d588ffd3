// `onset run FILE`: the single-machine mode. Embeds a coordinator and workers in this process,
// submits the study and shows progress until every cell has finished.
#pragma once

#include <atomic>
#include <ostream>
#include <string>

namespace onset::cli {

struct RunOptions {
  std::string file;                     // the study file
  std::string data_dir = "onset-data";  // onset.db, onsetd.token, coordinator.addr, work/
  // CPU slots of the embedded worker: trainers run at once, or fewer when cells need several
  // (resources.devices). 0: one per core (DefaultWorkers).
  int workers = 0;
  bool json = false;          // print the final results as JSON
  bool print_results = true;  // false: no results at the end (failures still on stderr)
  std::string trainer_path;   // empty: onset-train next to this executable
  // Each cell's points written as a TensorBoard run under this directory as they arrive
  // (onsetd --tensorboard-dir); empty: none.
  std::string tensorboard_dir;
  // Each cell mirrored as a run of this MLflow tracking server (onsetd --mlflow-uri); empty:
  // none. Its token, if any, from MLFLOW_TRACKING_TOKEN.
  std::string mlflow_uri;
  int poll_ms = 500;  // progress refresh
  // Bars per running cell redrawn in place (stderr is a terminal); else a line when a cell
  // changes state and at most every 10 s between (cli/views/progress_log.h).
  bool progress_bars = false;
};

// Returns the exit code (cli/exit_codes.h): 0 when every cell succeeded or diverged, 3 when
// some failed, 1 on an error, 2 for a bad study file or cells that need more devices than
// `workers`, 130 when interrupted. `interrupted` (set from a signal
// watcher) stops workers and the coordinator cleanly; the data directory keeps everything and a
// later run resumes.
int RunCommand(const RunOptions& options, const std::atomic<bool>& interrupted, std::ostream& out,
               std::ostream& err);

// The default number of CPU slots (RunOptions::workers) for `cores` CPU cores.
int DefaultWorkers(unsigned cores);

}  // namespace onset::cli
