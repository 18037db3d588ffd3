#include "cli/client/study_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_auth.h"
#include "common/grpc_status.h"

namespace onset::cli {

StudyClient::StudyClient(std::string address, const common::ClientSecurity& security,
                         std::chrono::milliseconds timeout)
    : address_(std::move(address)),
      timeout_(timeout),
      channel_(common::NewClientChannel(address_, security)),
      stub_(v1::StudyService::NewStub(channel_)),
      access_stub_(v1::AccessService::NewStub(channel_)) {}

StudyClient::StudyClient(std::string address, std::shared_ptr<grpc::Channel> channel,
                         std::chrono::milliseconds timeout)
    : address_(std::move(address)),
      timeout_(timeout),
      channel_(std::move(channel)),
      stub_(v1::StudyService::NewStub(channel_)),
      access_stub_(v1::AccessService::NewStub(channel_)) {}

bool StudyClient::Connects(std::chrono::milliseconds within) {
  const auto deadline = std::chrono::system_clock::now() + within;
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (true) {
    switch (state) {
      case GRPC_CHANNEL_READY:
        return true;
      case GRPC_CHANNEL_TRANSIENT_FAILURE:
      case GRPC_CHANNEL_SHUTDOWN:
        return false;
      default:  // idle or connecting
        break;
    }
    if (!channel_->WaitForStateChange(state, deadline)) return false;
    state = channel_->GetState(/*try_to_connect=*/true);
  }
}

void StudyClient::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() + timeout_);
}

absl::Status StudyClient::Convert(const char* rpc, const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      // The coordinator's own UNAVAILABLE (e.g. its database is locked) is an answer: its
      // message says why, under the RPC's name below.
      if (common::SentByServer(status)) return common::FromGrpcStatus(status, rpc, address_);
      return absl::Status(
          static_cast<absl::StatusCode>(status.error_code()),
          absl::StrCat("cannot reach the coordinator at ", address_, ": ", status.error_message()));
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return common::FromGrpcStatus(status);
    default:
      return common::FromGrpcStatus(status, rpc, address_);
  }
}

namespace {
// Storing a study at the cell limit, or cancelling or queueing all of its cells again, takes the
// coordinator tens of seconds on a small machine (docs/coordinator-benchmark.md): more than the
// other calls' deadline. The coordinator writes such a request in bounded transactions, so the
// wait costs nobody else.
constexpr std::chrono::milliseconds kStudySizedTimeout = std::chrono::minutes(5);
}  // namespace

void StudyClient::SetStudySizedDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::max<std::chrono::milliseconds>(timeout_, kStudySizedTimeout));
}

absl::StatusOr<v1::SubmitStudyResponse> StudyClient::Submit(const std::string& source_name,
                                                            const std::string& yaml,
                                                            const std::string& base_dir,
                                                            bool dry_run) {
  v1::SubmitStudyRequest request;
  request.set_source_name(source_name);
  request.set_yaml(yaml);
  request.set_base_dir(base_dir);
  request.set_dry_run(dry_run);
  grpc::ClientContext context;
  SetStudySizedDeadline(&context);
  std::unique_ptr<grpc::ClientReader<v1::SubmitStudyResponse>> reader =
      stub_->SubmitStudy(&context, request);
  // The answer comes in pieces: the first with the study and the counts, each with more cells.
  v1::SubmitStudyResponse response;
  v1::SubmitStudyResponse piece;
  bool first = true;
  while (reader->Read(&piece)) {
    if (first) {
      response = std::move(piece);
      first = false;
      continue;
    }
    for (v1::Cell& cell : *piece.mutable_cells()) *response.add_cells() = std::move(cell);
    for (std::string& id : *piece.mutable_new_cell_ids()) response.add_new_cell_ids(std::move(id));
  }
  if (auto s = Convert("SubmitStudy", reader->Finish()); !s.ok()) return s;
  if (first || response.cells_size() != response.cells_in_file()) {
    return absl::DataLossError(absl::StrCat("SubmitStudy to ", address_,
                                            ": the answer ended after ", response.cells_size(),
                                            " of ", response.cells_in_file(), " cells"));
  }
  return response;
}

absl::StatusOr<v1::ListStudiesResponse> StudyClient::List() {
  v1::ListStudiesRequest request;
  v1::ListStudiesResponse all;
  // Page by page, each reply bounded; a coordinator from before paging answers in one.
  do {
    v1::ListStudiesResponse page;
    grpc::ClientContext context;
    SetDeadline(&context);
    if (auto s = Convert("ListStudies", stub_->ListStudies(&context, request, &page)); !s.ok()) {
      return s;
    }
    if (!page.next_page_token().empty() &&
        (page.studies().empty() || page.next_page_token() == request.page_token())) {
      return absl::DataLossError(absl::StrCat(
          "ListStudies to ", address_, ": a page that does not lead on (", page.studies_size(),
          " studies, page token '", page.next_page_token(), "')"));
    }
    for (v1::Study& study : *page.mutable_studies()) *all.add_studies() = std::move(study);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return all;
}

absl::StatusOr<v1::ListWorkersResponse> StudyClient::Workers(bool all,
                                                             const std::string& page_token,
                                                             int page_size) {
  v1::ListWorkersRequest request;
  request.set_all(all);
  request.set_page_token(page_token);
  request.set_page_size(page_size);
  v1::ListWorkersResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (auto s = Convert("ListWorkers", stub_->ListWorkers(&context, request, &response)); !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::GetStudyResponse> StudyClient::Get(const std::string& name) {
  v1::GetStudyRequest request;
  request.set_name(name);
  v1::GetStudyResponse all;
  // Page by page; the study's counts are those of the last page read.
  do {
    v1::GetStudyResponse page;
    grpc::ClientContext context;
    SetDeadline(&context);
    if (auto s = Convert("GetStudy", stub_->GetStudy(&context, request, &page)); !s.ok()) return s;
    *all.mutable_study() = std::move(*page.mutable_study());
    for (v1::Cell& cell : *page.mutable_cells()) *all.add_cells() = std::move(cell);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return all;
}

absl::StatusOr<v1::GetResultsResponse> StudyClient::Results(const std::string& study) {
  v1::GetResultsRequest request;
  request.set_study(study);
  v1::GetResultsResponse all;
  do {
    v1::GetResultsResponse page;
    grpc::ClientContext context;
    SetDeadline(&context);
    if (auto s = Convert("GetResults", stub_->GetResults(&context, request, &page)); !s.ok()) {
      return s;
    }
    for (v1::CellResult& r : *page.mutable_results()) *all.add_results() = std::move(r);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return all;
}

absl::StatusOr<v1::CancelCellsResponse> StudyClient::Cancel(const std::string& study,
                                                            const std::vector<std::string>& cells) {
  v1::CancelCellsRequest request;
  request.set_study(study);
  for (const std::string& c : cells) request.add_cell_ids(c);
  v1::CancelCellsResponse response;
  grpc::ClientContext context;
  SetStudySizedDeadline(&context);
  if (auto s = Convert("CancelCells", stub_->CancelCells(&context, request, &response)); !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::RerunCellsResponse> StudyClient::Rerun(
    const std::string& study, const std::vector<v1::CellState>& states,
    const std::map<std::string, std::string>& where, const std::vector<std::string>& cells,
    bool fresh) {
  v1::RerunCellsRequest request;
  request.set_study(study);
  for (v1::CellState s : states) request.add_states(s);
  for (const auto& [k, v] : where) (*request.mutable_where())[k] = v;
  for (const std::string& c : cells) request.add_cell_ids(c);
  request.set_fresh(fresh);
  v1::RerunCellsResponse response;
  grpc::ClientContext context;
  SetStudySizedDeadline(&context);
  if (auto s = Convert("RerunCells", stub_->RerunCells(&context, request, &response)); !s.ok()) {
    return s;
  }
  return response;
}

absl::Status StudyClient::Watch(
    const std::string& study, int64_t after_seq,
    const std::function<bool(const v1::WatchStudyResponse&)>& on_message) {
  v1::WatchStudyRequest request;
  request.set_study(study);
  request.set_after_seq(after_seq);
  grpc::ClientContext context;  // no deadline: a watch lasts as long as the study
  std::unique_ptr<grpc::ClientReader<v1::WatchStudyResponse>> reader =
      stub_->WatchStudy(&context, request);
  v1::WatchStudyResponse message;
  while (reader->Read(&message)) {
    if (!on_message(message)) {
      context.TryCancel();
      (void)reader->Finish();
      return absl::OkStatus();
    }
  }
  return Convert("WatchStudy", reader->Finish());
}

absl::StatusOr<v1::ReadLogsResponse> StudyClient::ReadLogs(const v1::ReadLogsRequest& request) {
  v1::ReadLogsResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout_ +
                       std::chrono::milliseconds(request.wait_ms()));
  if (auto s = Convert("ReadLogs", stub_->ReadLogs(&context, request, &response)); !s.ok()) {
    return s;
  }
  return response;
}

absl::Status StudyClient::Backup(
    const std::function<absl::Status(const v1::BackupChunk&)>& on_chunk) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::hours(1));
  std::unique_ptr<grpc::ClientReader<v1::BackupChunk>> reader =
      stub_->Backup(&context, v1::BackupRequest());
  v1::BackupChunk chunk;
  absl::Status stopped;
  while (reader->Read(&chunk)) {
    stopped = on_chunk(chunk);
    if (!stopped.ok()) {
      context.TryCancel();
      break;
    }
  }
  absl::Status finished = Convert("Backup", reader->Finish());
  return stopped.ok() ? finished : stopped;
}

absl::StatusOr<v1::DescribeCellResponse> StudyClient::DescribeCell(const std::string& study,
                                                                   const std::string& cell_id) {
  v1::DescribeCellRequest request;
  request.set_study(study);
  request.set_cell_id(cell_id);
  v1::DescribeCellResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout_);
  if (auto s = Convert("DescribeCell", stub_->DescribeCell(&context, request, &response));
      !s.ok()) {
    return s;
  }
  return response;
}

absl::Status StudyClient::RecordExport(const std::string& study, const std::string& cell_id,
                                       const v1::CellExport& exported) {
  v1::RecordExportRequest request;
  request.set_study(study);
  request.set_cell_id(cell_id);
  *request.mutable_exported() = exported;
  v1::RecordExportResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout_);
  return Convert("RecordExport", stub_->RecordExport(&context, request, &response));
}

absl::StatusOr<StudyClient::Curves> StudyClient::Metrics(const std::string& study,
                                                         const std::vector<std::string>& metrics,
                                                         const std::vector<std::string>& cell_ids,
                                                         CurveTimes* times) {
  v1::StreamMetricsRequest request;
  request.set_study(study);
  for (const std::string& m : metrics) request.add_metrics(m);
  for (const std::string& c : cell_ids) request.add_cell_ids(c);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10 * timeout_);
  std::unique_ptr<grpc::ClientReader<v1::MetricsChunk>> reader =
      stub_->StreamMetrics(&context, request);
  Curves curves;
  v1::MetricsChunk chunk;
  while (reader->Read(&chunk)) {
    for (const v1::CellCurve& c : chunk.curves()) {
      auto& points = curves[c.cell_id()][c.metric()];
      std::vector<int64_t>* at = times == nullptr ? nullptr : &(*times)[c.cell_id()][c.metric()];
      for (int i = 0; i < c.tokens_size() && i < c.values_size(); ++i) {
        points.emplace_back(c.tokens(i), c.values(i));
        // A coordinator from before the wall time sends none.
        if (at != nullptr) at->push_back(i < c.at_unix_ms_size() ? c.at_unix_ms(i) : 0);
      }
    }
  }
  if (auto s = Convert("StreamMetrics", reader->Finish()); !s.ok()) return s;
  return curves;
}

absl::StatusOr<v1::CreateTokenResponse> StudyClient::CreateToken(const std::string& name,
                                                                 const std::string& role) {
  v1::CreateTokenRequest request;
  request.set_name(name);
  request.set_role(role);
  v1::CreateTokenResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (auto s = Convert("CreateToken", access_stub_->CreateToken(&context, request, &response));
      !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::ListTokensResponse> StudyClient::ListTokens() {
  v1::ListTokensResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (auto s = Convert("ListTokens", access_stub_->ListTokens(&context, {}, &response)); !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::RevokeTokenResponse> StudyClient::RevokeToken(const std::string& name) {
  v1::RevokeTokenRequest request;
  request.set_name(name);
  v1::RevokeTokenResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (auto s = Convert("RevokeToken", access_stub_->RevokeToken(&context, request, &response));
      !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::ReadAuditResponse> StudyClient::ReadAudit(const v1::ReadAuditRequest& request) {
  v1::ReadAuditResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (auto s = Convert("ReadAudit", access_stub_->ReadAudit(&context, request, &response));
      !s.ok()) {
    return s;
  }
  return response;
}

}  // namespace onset::cli
