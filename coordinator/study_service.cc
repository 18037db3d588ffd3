#include "coordinator/study_service.h"

#include "common/grpc_status.h"
#include "coordinator/study_file.h"

namespace onset::coordinator {
namespace {

onset::v1::CellState ToProto(CellState s) {
  switch (s) {
    case CellState::kQueued:
      return onset::v1::CELL_STATE_QUEUED;
    case CellState::kRunning:
      return onset::v1::CELL_STATE_RUNNING;
    case CellState::kSucceeded:
      return onset::v1::CELL_STATE_SUCCEEDED;
    case CellState::kFailed:
      return onset::v1::CELL_STATE_FAILED;
  }
  return onset::v1::CELL_STATE_UNSPECIFIED;
}

}  // namespace

void ToProto(const StudyInfo& in, onset::v1::Study* out) {
  out->set_name(in.name);
  out->set_source_name(in.source_name);
  out->set_created_unix_ms(in.created_unix_ms);
  out->set_cells_total(in.cells_total);
  for (const auto& [state, count] : in.cells_by_state) (*out->mutable_cells_by_state())[state] = count;
}

void ToProto(const CellInfo& in, onset::v1::Cell* out) {
  out->set_id(in.id);
  out->set_study(in.study);
  for (const auto& [axis, value] : in.axes) (*out->mutable_axes())[axis] = value;
  out->set_state(ToProto(in.state));
  out->set_tokens_done(in.tokens_done);
  out->set_tokens_budget(in.tokens_budget);
  if (in.latest_loss) out->set_latest_loss(*in.latest_loss);
  out->set_attempts(in.attempts);
  out->set_last_error(in.last_error);
  out->set_tokens_per_second(in.tokens_per_second);
}

grpc::Status StudyServiceImpl::SubmitStudy(grpc::ServerContext*,
                                           const onset::v1::SubmitStudyRequest* request,
                                           onset::v1::SubmitStudyResponse* response) {
  const std::string source = request->source_name().empty() ? "<study>" : request->source_name();
  absl::StatusOr<StudySpec> spec = ParseStudyFile(source, request->yaml(), request->base_dir());
  if (!spec.ok()) return common::ToGrpcStatus(spec.status());
  NewStudy study{spec->name, spec->description, spec->source_name, spec->source_yaml,
                 std::move(spec->cells)};
  absl::StatusOr<AddStudyResult> added =
      request->dry_run() ? store_->PreviewStudy(study) : store_->AddStudy(study);
  if (!added.ok()) return common::ToGrpcStatus(added.status());
  ToProto(added->study, response->mutable_study());
  response->set_cells_added(added->cells_added);
  for (const CellInfo& cell : added->cells) ToProto(cell, response->add_cells());
  for (const std::string& id : added->new_cell_ids) response->add_new_cell_ids(id);
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::ListStudies(grpc::ServerContext*,
                                           const onset::v1::ListStudiesRequest*,
                                           onset::v1::ListStudiesResponse* response) {
  absl::StatusOr<std::vector<StudyInfo>> studies = store_->ListStudies();
  if (!studies.ok()) return common::ToGrpcStatus(studies.status());
  for (const StudyInfo& s : *studies) ToProto(s, response->add_studies());
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::GetStudy(grpc::ServerContext*,
                                        const onset::v1::GetStudyRequest* request,
                                        onset::v1::GetStudyResponse* response) {
  absl::StatusOr<StudyDetail> detail = store_->GetStudy(request->name());
  if (!detail.ok()) return common::ToGrpcStatus(detail.status());
  ToProto(detail->study, response->mutable_study());
  for (const CellInfo& cell : detail->cells) ToProto(cell, response->add_cells());
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::GetResults(grpc::ServerContext*,
                                          const onset::v1::GetResultsRequest* request,
                                          onset::v1::GetResultsResponse* response) {
  absl::StatusOr<std::vector<CellResult>> results = store_->Results(request->study());
  if (!results.ok()) return common::ToGrpcStatus(results.status());
  for (const CellResult& r : *results) {
    onset::v1::CellResult* out = response->add_results();
    ToProto(r.cell, out->mutable_cell());
    for (const auto& [name, value] : r.final_metrics) (*out->mutable_final_metrics())[name] = value;
  }
  return grpc::Status::OK;
}

}  // namespace onset::coordinator
