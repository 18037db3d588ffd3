// `onsetd --tensorboard-dir DIR`: each cell as a TensorBoard run in DIR, written as its points
// arrive, so that `tensorboard --logdir DIR` shows a study while it runs.
//
// A cell's run is the directory `onset export --format tensorboard` gives it
// (common/tensorboard/cell_run.h). Each sync reads the cell and its points from the store and
// appends to the run's event file what it has not written yet: per metric, the points beyond
// the largest token count written (step = tokens, wall time = when the point was measured,
// value as float32), and once the cell reached a final state, the hparams session's end. The
// first sync of a cell in this process starts a new event file,
// events.out.tfevents.SECONDS.onsetd.PID.N, with the cell's text (study, axes, config), its
// hparams session start and every point stored so far: TensorBoard reads a run's files in name
// order, and a tag's steps starting again in a later file replace the earlier file's from that
// step on, so a restarted onsetd shows each point once. A cell is only given a run once it has
// a point (a trunk never has: its points are its branches').
//
// Points stored again for tokens already written (an attempt resumed from an earlier
// checkpoint) keep the values first written until the next restart; `onset export --format
// tensorboard` writes the stored values.
//
// Thread-safety: none; the CellSyncLoop calls it from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "common/clock.h"
#include "coordinator/mirror/cell_sync_loop.h"
#include "coordinator/store/result_store.h"

namespace onset::coordinator {

class TensorBoardWriter : public CellSink {
 public:
  // `store` and `clock` must outlive the writer. It remembers what it wrote of at most
  // `max_cells` cells (beyond, the one synced longest ago is forgotten: its next sync starts a
  // new file with all its points).
  TensorBoardWriter(std::string dir, ResultStore* store, const common::Clock* clock,
                    size_t max_cells = 10'000);

  // NotFound (nothing written) for a cell or study that is gone; FailedPrecondition naming the
  // file that could not be written; the store's error.
  absl::Status Sync(const std::string& study, const std::string& cell_id) override;

  const std::string& dir() const { return dir_; }

 private:
  struct Run {
    std::string file;                        // empty: none started yet
    std::map<std::string, int64_t> written;  // metric -> largest tokens written
    bool ended = false;                      // the session's end is written
    uint64_t last_sync = 0;
  };

  Run& RunOf(const std::string& study, const std::string& cell_id);

  const std::string dir_;
  ResultStore* const store_;
  const common::Clock* const clock_;
  const size_t max_cells_;
  std::map<std::pair<std::string, std::string>, Run> runs_;
  uint64_t syncs_ = 0;
  int files_started_ = 0;
};

}  // namespace onset::coordinator
