// The store's results: each cell's final metrics, the names of the metrics a study has, and its
// points.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/store/lease_store.h"
#include "coordinator/store/study_store.h"

namespace onset::coordinator {

struct CellResult {
  CellInfo cell;
  std::map<std::string, double> final_metrics;  // name -> value at its largest tokens count
};

// One export of a cell (`onset export-model`), as the client that wrote it reported it: the
// files are wherever that client ran.
struct CellExport {
  std::string format;  // "safetensors" or "hf"
  std::string host;    // the machine it was written on
  std::string path;    // the file or directory there
  int64_t bytes = 0;   // its size
  int64_t tokens = 0;  // tokens trained by the checkpoint it was made from
  int64_t at_unix_ms = 0;
};
// Exports kept per cell: the newest; an older one is forgotten as a new one is recorded.
inline constexpr int kMaxCellExports = 64;

// DescribeCell's answer: a cell, its config, the checkpoints its lineage recorded and its
// exports.
struct CellOutputs {
  CellInfo cell;
  std::string config_json;               // canonical cell config; a trunk's: its spec
  std::vector<ResumePoint> checkpoints;  // the newest first, at most kMaxDescribedCheckpoints
  std::vector<CellExport> exports;       // the newest first, at most kMaxCellExports
};
inline constexpr int kMaxDescribedCheckpoints = 64;

// A page of results; next_after as in StudyDetail.
struct ResultPage {
  std::vector<CellResult> results;  // queue order
  int64_t next_after = 0;
};

// Results and metric points.
class ResultStore {
 public:
  virtual ~ResultStore() = default;

  // The cells of `page` with their final metrics, trunks left out (they are not grid points).
  // NotFound for an unknown study.
  virtual absl::StatusOr<ResultPage> Results(const std::string& study, const CellPage& page) = 0;
  // Every cell of the study with its final metrics.
  absl::StatusOr<std::vector<CellResult>> Results(const std::string& study) {
    absl::StatusOr<ResultPage> all = Results(study, {});
    if (!all.ok()) return all.status();
    return std::move(all->results);
  }

  // The names of the metrics the study's cells reported (trunks left out), each with how many
  // cells reported it, by name; one aggregate read, whatever the number of points. NotFound for
  // an unknown study.
  virtual absl::StatusOr<std::vector<std::pair<std::string, int>>> MetricNames(
      const std::string& study) = 0;

  // Calls `point` for every stored point of `metrics` (all when empty) of the study's cells
  // (`cell_ids`, or all when empty; never a trunk's: its stable phase is in its branches'
  // curves), ordered by cell (queue order), name and tokens; stops early when `point` returns
  // false. `point` is never called while a database reader is held: the points are read in
  // pages, each its own snapshot, so a point added meanwhile may or may not be seen, and none
  // twice. NotFound for an unknown study or cell. NaN values come as NaN; at_unix_ms is when the
  // point was measured, 0 when that is not known.
  // The cell `cell_id` (a full id) of `study` with its config and checkpoints. NotFound for an
  // unknown study or cell.
  virtual absl::StatusOr<CellOutputs> DescribeCell(const std::string& study,
                                                   const std::string& cell_id) = 0;
  // Records an export of the cell `cell_id` (a full id) of `study`, stamped now; the cell keeps
  // its newest kMaxCellExports. NotFound for an unknown study or cell.
  virtual absl::Status RecordExport(const std::string& study, const std::string& cell_id,
                                    const CellExport& exported) = 0;
  virtual absl::Status ForEachMetricPoint(
      const std::string& study, const std::vector<std::string>& metrics,
      const std::vector<std::string>& cell_ids,
      const std::function<bool(const std::string& cell_id, const std::string& metric,
                               int64_t tokens, double value, int64_t at_unix_ms)>& point) = 0;
};

}  // namespace onset::coordinator
