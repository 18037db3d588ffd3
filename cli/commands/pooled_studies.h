// Several studies read as one through the coordinator client (analysis/study_pool.h says how
// they are pooled): compare, plot, fit and export take several studies.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/study_pool.h"
#include "cli/client/study_client.h"

namespace onset::cli {

using analysis::PooledStudies;

// analysis::StudySource over the coordinator's client.
class ClientStudySource : public analysis::StudySource {
 public:
  explicit ClientStudySource(StudyClient* client) : client_(client) {}
  absl::StatusOr<v1::GetStudyResponse> GridCells(const std::string& study) override;
  absl::StatusOr<analysis::Curves> StudyCurves(const std::string& study,
                                               const std::vector<std::string>& metrics,
                                               analysis::CurveTimes* times) override;
  absl::StatusOr<std::string> CellConfig(const std::string& study,
                                         const std::string& cell_id) override;

 private:
  StudyClient* const client_;
};

// analysis::PoolStudies through `client`.
absl::StatusOr<PooledStudies> PoolStudies(StudyClient& client,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::string>& metrics,
                                          bool with_times = false);

}  // namespace onset::cli
