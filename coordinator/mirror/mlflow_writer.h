// `onsetd --mlflow-uri URI`: each cell as an MLflow run, kept up to date as its points arrive.
//
// The study is the experiment (created when missing), a cell one run of it, found by its tag
// onset.cell_id, so that after a restart the writer picks up where it stopped: it reads the run's
// latest step per metric from MLflow and sends only the points after it. A run gets its axes and
// the cell's canonical config as params (mlflow_names.h), the tags onset.study, onset.cell_id
// and onset.state, every metric point with step = tokens and timestamp = when it was measured,
// in batches of at most 1000 (MLflow's limit), and the cell's state as its status (RUNNING until
// it ends: FINISHED, FAILED or KILLED, with its end time). A cell gets a run from its first point
// on (a trunk never: its points are its branches').
//
// A sync that fails (the server down, slow or refusing) returns the error and keeps what was
// sent: the CellSyncLoop tries the cell again later, resending nothing that was accepted.
//
// Thread-safety: none; the CellSyncLoop calls it from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "coordinator/mirror/cell_sync_loop.h"
#include "coordinator/mirror/json_http.h"
#include "coordinator/store/result_store.h"

namespace onset::coordinator {

class MlflowWriter : public CellSink {
 public:
  // `store`, `http` and `clock` must outlive the writer. It remembers at most `max_cells` runs
  // (beyond, the one synced longest ago is forgotten and found again in MLflow when needed).
  MlflowWriter(ResultStore* store, JsonHttp* http, const common::Clock* clock,
               size_t max_cells = 10'000);

  absl::Status Sync(const std::string& study, const std::string& cell_id) override;

 private:
  struct Run {
    std::string id;                          // empty: not found or made yet
    std::map<std::string, int64_t> written;  // MLflow metric key -> largest step sent
    std::string status;                      // the status last set
    std::string state;                       // the onset.state tag last set
    uint64_t last_sync = 0;
  };

  absl::StatusOr<std::string> Experiment(const std::string& study);
  // Finds the cell's run in MLflow (reading what it holds) or makes it; fills `run`.
  absl::Status FindOrCreateRun(const std::string& experiment, const std::string& study,
                               const std::string& cell_id, const CellOutputs& cell, Run* run);
  Run& RunOf(const std::string& study, const std::string& cell_id);

  ResultStore* const store_;
  JsonHttp* const http_;
  const common::Clock* const clock_;
  const size_t max_cells_;
  std::map<std::string, std::string> experiments_;  // study -> experiment id
  std::map<std::pair<std::string, std::string>, Run> runs_;
  uint64_t syncs_ = 0;
};

}  // namespace onset::coordinator
