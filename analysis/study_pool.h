// Several studies read as one (`onset compare S1 S2 ...`, the dashboard's comparison with
// &with=): a follow-up study (more seeds, another window) compared together with the first.
// Their cells and curves are pooled and grouped by axes as one study's are; a cell's id hashes
// its study's name too, so the same grid point submitted in two studies is two cells that
// trained the same model on the same data: cells whose configs differ only in their study are
// one experiment and count once (the first study's, in the order given), with a note saying
// which was used and a warning when their results differ.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/study_compare.h"
#include "onset/v1/onset.pb.h"

namespace onset::analysis {

// Where the studies are read from: the CLI's coordinator client, or the coordinator's own store.
class StudySource {
 public:
  virtual ~StudySource() = default;
  // The study and its grid cells (trunks left out: they have no curves of their own). NotFound
  // naming an unknown study.
  virtual absl::StatusOr<v1::GetStudyResponse> GridCells(const std::string& study) = 0;
  // The points of `metrics` (empty: every metric) of the study's cells; with `times`, also when
  // each was measured.
  virtual absl::StatusOr<Curves> StudyCurves(const std::string& study,
                                             const std::vector<std::string>& metrics,
                                             CurveTimes* times) = 0;
  // The cell's canonical config (JSON).
  virtual absl::StatusOr<std::string> CellConfig(const std::string& study,
                                                 const std::string& cell_id) = 0;
};

struct PooledStudies {
  v1::GetStudyResponse study;      // every kept cell (each with its own study), trunks removed
  Curves curves;                   // of the metrics asked for, per kept cell
  CurveTimes times;                // when asked for: when each point was measured
  std::vector<std::string> notes;  // duplicates counted once, results that differ
};

// At most this many studies are pooled at once.
inline constexpr int kMaxPooledStudies = 32;

// Reads `names` (in order; each at most once; 1 to kMaxPooledStudies) and their curves of
// `metrics` (empty: every metric). Duplicates' results are compared on the first metric, or on
// every metric they share when `metrics` is empty. `with_times` also fills `times`. Errors as
// the source's (an unknown study: NotFound naming it); InvalidArgument for a study named twice
// or too many names.
absl::StatusOr<PooledStudies> PoolStudies(StudySource& source,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::string>& metrics,
                                          bool with_times = false);

// A cell's config without its study's name: equal for the same experiment in two studies.
std::string ConfigWithoutStudy(const std::string& config_json);

}  // namespace onset::analysis
