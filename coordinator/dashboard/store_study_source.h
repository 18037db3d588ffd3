// The dashboard's reads of a study, its cells and its curves from the coordinator's stores, and
// analysis::StudySource over them (several studies pooled in one comparison, study_pool.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/study_pool.h"
#include "coordinator/store/result_store.h"
#include "coordinator/store/study_store.h"
#include "onset/v1/onset.pb.h"

namespace onset::coordinator {

// The study and its cells; `grid_points_only` leaves out trunks (jobs, not grid points: they
// have no curves of their own), for what reads results.
absl::StatusOr<v1::GetStudyResponse> StudyProto(StudyStore& store, const std::string& name,
                                                bool grid_points_only = false);

// The points of `metrics` (empty: every metric) of `cells` (empty: every cell) of the study;
// with `times`, also when each point was measured (0: not known).
absl::StatusOr<analysis::Curves> StudyCurves(ResultStore& store, const std::string& study,
                                             const std::vector<std::string>& metrics,
                                             const std::vector<std::string>& cells,
                                             analysis::CurveTimes* times = nullptr);

class StoreStudySource : public analysis::StudySource {
 public:
  StoreStudySource(StudyStore* studies, ResultStore* results)
      : studies_(studies), results_(results) {}
  absl::StatusOr<v1::GetStudyResponse> GridCells(const std::string& study) override;
  absl::StatusOr<analysis::Curves> StudyCurves(const std::string& study,
                                               const std::vector<std::string>& metrics,
                                               analysis::CurveTimes* times) override;
  absl::StatusOr<std::string> CellConfig(const std::string& study,
                                         const std::string& cell_id) override;

 private:
  StudyStore* const studies_;
  ResultStore* const results_;
};

}  // namespace onset::coordinator
