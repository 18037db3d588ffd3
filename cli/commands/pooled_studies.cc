#include "cli/commands/pooled_studies.h"

#include "cli/views/trunk_view.h"

namespace onset::cli {

absl::StatusOr<v1::GetStudyResponse> ClientStudySource::GridCells(const std::string& study) {
  absl::StatusOr<v1::GetStudyResponse> got = client_->Get(study);
  if (got.ok()) RemoveTrunks(&*got);
  return got;
}

absl::StatusOr<analysis::Curves> ClientStudySource::StudyCurves(
    const std::string& study, const std::vector<std::string>& metrics,
    analysis::CurveTimes* times) {
  return client_->Metrics(study, metrics, {}, times);
}

absl::StatusOr<std::string> ClientStudySource::CellConfig(const std::string& study,
                                                          const std::string& cell_id) {
  absl::StatusOr<v1::DescribeCellResponse> d = client_->DescribeCell(study, cell_id);
  if (!d.ok()) return d.status();
  return d->config_json();
}

absl::StatusOr<PooledStudies> PoolStudies(StudyClient& client,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::string>& metrics,
                                          bool with_times) {
  ClientStudySource source(&client);
  return analysis::PoolStudies(source, names, metrics, with_times);
}

}  // namespace onset::cli
