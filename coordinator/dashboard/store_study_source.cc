#include "coordinator/dashboard/store_study_source.h"

#include "coordinator/rpc/proto_convert.h"

namespace onset::coordinator {

absl::StatusOr<v1::GetStudyResponse> StudyProto(StudyStore& store, const std::string& name,
                                                bool grid_points_only) {
  absl::StatusOr<StudyDetail> detail = store.GetStudy(name);
  if (!detail.ok()) return detail.status();
  v1::GetStudyResponse out;
  ToProto(detail->study, out.mutable_study());
  for (const CellInfo& cell : detail->cells) {
    if (grid_points_only && cell.role == CellRole::kTrunk) continue;
    ToProto(cell, out.add_cells());
  }
  return out;
}

absl::StatusOr<analysis::Curves> StudyCurves(ResultStore& store, const std::string& study,
                                             const std::vector<std::string>& metrics,
                                             const std::vector<std::string>& cells,
                                             analysis::CurveTimes* times) {
  analysis::Curves curves;
  absl::Status s = store.ForEachMetricPoint(study, metrics, cells,
                                            [&](const std::string& cell, const std::string& metric,
                                                int64_t tokens, double value, int64_t at_unix_ms) {
                                              curves[cell][metric].emplace_back(tokens, value);
                                              if (times != nullptr)
                                                (*times)[cell][metric].push_back(at_unix_ms);
                                              return true;
                                            });
  if (!s.ok()) return s;
  return curves;
}

absl::StatusOr<v1::GetStudyResponse> StoreStudySource::GridCells(const std::string& study) {
  return StudyProto(*studies_, study, /*grid_points_only=*/true);
}

absl::StatusOr<analysis::Curves> StoreStudySource::StudyCurves(
    const std::string& study, const std::vector<std::string>& metrics,
    analysis::CurveTimes* times) {
  return coordinator::StudyCurves(*results_, study, metrics, {}, times);
}

absl::StatusOr<std::string> StoreStudySource::CellConfig(const std::string& study,
                                                         const std::string& cell_id) {
  absl::StatusOr<CellOutputs> outputs = results_->DescribeCell(study, cell_id);
  if (!outputs.ok()) return outputs.status();
  return outputs->config_json;
}

}  // namespace onset::coordinator
