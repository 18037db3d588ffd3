#include "coordinator/rpc/study_service.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"

#include "base/posix_io.h"
#include "common/free_memory.h"
#include "common/grpc_status.h"
#include "coordinator/access/audit.h"
#include "coordinator/cells/checkpoint_layout.h"
#include "coordinator/cells/rerun_selection.h"
#include "coordinator/planning/study_submission.h"
#include "coordinator/rpc/method_roles.h"
#include "coordinator/rpc/study_listing.h"
#include "coordinator/store/feeds.h"
#include "coordinator/study/study_file.h"
#include "db/backup_destination.h"
#include "db/snapshot_stream.h"

namespace onset::coordinator {
namespace {

// Results carry every metric's final value: fewer cells per page by default.
constexpr int kResultPageCells = 1000;

// Hands the memory a submission held (its parsed file, plan and answer: hundreds of MB at the
// cell limit) back to the system when destroyed, which the allocator would otherwise keep mapped:
// declared before those, it runs after they are freed, however the call ends.
struct ReleaseMemoryAtTheEnd {
  ~ReleaseMemoryAtTheEnd() { common::ReleaseFreeMemory(); }
};

}  // namespace

grpc::Status StudyServiceImpl::SubmitStudy(
    grpc::ServerContext* context, const onset::v1::SubmitStudyRequest* request,
    grpc::ServerWriter<onset::v1::SubmitStudyResponse>* writer) {
  common::Caller caller;
  if (grpc::Status s = auth_->Check(*context, method_roles::kSubmitStudy, &caller); !s.ok())
    return s;
  if (request->source_name().size() > kMaxSourceNameBytes) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "source_name: " + std::to_string(request->source_name().size()) +
                            " bytes; at most " + std::to_string(kMaxSourceNameBytes) +
                            " (the study file's path as the submitter names it)");
  }
  // Parsing, planning and the answer hold every cell of the study: so many at once, no more.
  std::optional<common::Admission::Ticket> admitted = submissions_.Enter(kSubmissionWait);
  if (!admitted) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "the coordinator is busy with " + std::to_string(submissions_.places()) +
                            " other submissions; submit again later");
  }
  const ReleaseMemoryAtTheEnd release;
  const std::string source = request->source_name().empty() ? "<study>" : request->source_name();
  // Planned and stored again (from a new reading of the file) when another submission of the
  // study lands in between.
  PlannedSubmission planned_submission;
  absl::StatusOr<AddStudyResult> added = SubmitPlanned(
      *store_, [&] { return ParseStudyFile(source, request->yaml(), request->base_dir()); },
      shared_checkpoints_, request->dry_run(), &planned_submission);
  if (!added.ok()) return common::ToGrpcStatus(added.status());
  if (!request->dry_run()) {
    Audit(*store_, caller, context->peer(), "submit", added->study.name,
          std::to_string(added->cells_added) + " cells added, " +
              std::to_string(added->cells.size()) + " in " + source);
  }
  const PlannedSubmission* planned = &planned_submission;
  // The file's cells in pieces of kPageCells, each with the new ones among them.
  const std::set<std::string> fresh(added->new_cell_ids.begin(), added->new_cell_ids.end());
  const std::vector<CellInfo>& cells = added->cells;
  // The whole answer, not only each piece, is bounded: a client that reads one piece just before
  // each limit would hold the place for as many limits as there are pieces.
  const auto answer_deadline = std::chrono::steady_clock::now() + 2 * stalled_reader_limit_;
  size_t from = 0;
  do {
    onset::v1::SubmitStudyResponse out;
    if (from == 0) {
      ToProto(added->study, out.mutable_study());
      out.set_cells_added(added->cells_added);
      out.set_cells_in_file(static_cast<int32_t>(cells.size()));
      out.set_tokens_to_train(planned->tokens_to_train);
      out.set_tokens_without_sharing(planned->tokens_without_sharing);
      for (const std::string& note : planned->sharing_notes) out.add_sharing_notes(note);
    }
    // At most kPageCells cells and kMaxCellsReplyBytes a piece, one cell at least.
    const size_t end = std::min(cells.size(), from + kPageCells);
    size_t to = from;
    size_t bytes = out.ByteSizeLong();
    while (to < end && (to == from || bytes <= kMaxCellsReplyBytes)) {
      onset::v1::Cell* cell = out.add_cells();
      ToProto(cells[to], cell);
      bytes += cell->ByteSizeLong();
      if (fresh.count(cells[to].id) > 0) out.add_new_cell_ids(cells[to].id);
      ++to;
    }
    // The study is stored by now: a client gone meanwhile loses only the answer. One that stops
    // reading loses the call within the limit, and with it the place and the cells it holds.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        answer_deadline - std::chrono::steady_clock::now());
    if (!watchdog_.Write(context, writer, out,
                         std::clamp(left, std::chrono::milliseconds(1), stalled_reader_limit_))) {
      return common::ToGrpcStatus(absl::CancelledError(
          std::string(request->dry_run() ? "nothing was written" : "the study is stored") +
          ", but the client stopped reading the answer or went away"));
    }
    from = to;
  } while (from < cells.size());
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::ListStudies(grpc::ServerContext* context,
                                           const onset::v1::ListStudiesRequest* request,
                                           onset::v1::ListStudiesResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kListStudies); !s.ok()) return s;
  // A page, bounded in studies and bytes (study_listing.h).
  absl::StatusOr<onset::v1::ListStudiesResponse> page =
      ListStudiesPage(*store_, request->page_size(), request->page_token());
  if (!page.ok()) return common::ToGrpcStatus(page.status());
  *response = *std::move(page);
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::ListWorkers(grpc::ServerContext* context,
                                           const onset::v1::ListWorkersRequest* request,
                                           onset::v1::ListWorkersResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kListWorkers); !s.ok()) return s;
  WorkerQuery query;
  if (request->page_size() < 0 || request->page_size() > kMaxWorkersPerPage) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "page_size: 0 (the default, " + std::to_string(kWorkersPerPage) + ") to " +
                            std::to_string(kMaxWorkersPerPage));
  }
  query.limit = request->page_size() > 0 ? request->page_size() : kWorkersPerPage;
  if (!request->page_token().empty()) {
    // "LAST_SEEN_UNIX_MS:WORKER_ID", as a reply's next_page_token.
    const std::string& token = request->page_token();
    const size_t colon = token.find(':');
    int64_t seen = 0;
    if (colon == std::string::npos || token.size() > 512 ||
        !absl::SimpleAtoi(token.substr(0, colon), &seen)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "page_token: not one this coordinator gave");
    }
    query.after = std::make_pair(seen, token.substr(colon + 1));
  }
  if (!request->all()) {
    query.live_since_unix_ms =
        clock_.WallUnixMs() -
        std::chrono::duration_cast<std::chrono::milliseconds>(kWorkerLiveWindow).count();
  }
  absl::StatusOr<WorkerPage> page = store_->ListWorkers(query);
  if (!page.ok()) return common::ToGrpcStatus(page.status());
  response->set_not_live(static_cast<int32_t>(page->not_live));
  // One worker may name a thousand devices: the reply is bounded so that it always fits in a
  // message, and continues where it stopped.
  size_t bytes = 0;
  std::optional<std::pair<int64_t, std::string>> next = page->next;
  int listed = 0;
  for (const WorkerInfo& w : page->workers) {
    if (bytes > kMaxWorkersReplyBytes) {
      next = std::make_pair(response->workers().rbegin()->last_seen_unix_ms(),
                            response->workers().rbegin()->id());
      break;
    }
    onset::v1::Worker* out = response->add_workers();
    out->set_id(w.id);
    out->set_host(w.host);
    out->set_slots(w.slots);
    out->set_version(w.version);
    out->set_registered_unix_ms(w.registered_unix_ms);
    out->set_last_seen_unix_ms(w.last_seen_unix_ms);
    for (const std::string& device : w.devices) out->add_devices(device);
    out->set_slurm_job(w.slurm_job);
    out->set_exited_unix_ms(w.exited_unix_ms);
    for (const RunningAttempt& a : w.running) {
      onset::v1::Worker::Job* job = out->add_jobs();
      job->set_study(a.study);
      job->set_cell_id(a.cell_id);
      job->set_attempt(a.attempt);
      for (const std::string& device : a.devices) job->add_devices(device);
    }
    bytes += out->ByteSizeLong();
    ++listed;
  }
  // Those of the query this reply leaves to later pages.
  response->set_omitted(static_cast<int32_t>(std::max<int64_t>(0, page->matching - listed)));
  if (next) response->set_next_page_token(std::to_string(next->first) + ":" + next->second);
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::GetStudy(grpc::ServerContext* context,
                                        const onset::v1::GetStudyRequest* request,
                                        onset::v1::GetStudyResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kGetStudy); !s.ok()) return s;
  absl::StatusOr<CellPage> page =
      ParsePage(request->page_size(), request->page_token(), static_cast<int>(kPageCells));
  if (!page.ok()) return common::ToGrpcStatus(page.status());
  absl::StatusOr<StudyDetail> detail = store_->GetStudy(request->name(), *page);
  if (!detail.ok()) return common::ToGrpcStatus(detail.status());
  ToProto(detail->study, response->mutable_study());
  // Cut short past kMaxCellsReplyBytes, the next page starting after the last cell sent.
  int64_t next_after = detail->next_after;
  size_t bytes = response->ByteSizeLong();
  for (size_t i = 0; i < detail->cells.size(); ++i) {
    onset::v1::Cell* out = response->add_cells();
    ToProto(detail->cells[i], out);
    bytes += out->ByteSizeLong();
    if (bytes > kMaxCellsReplyBytes && i + 1 < detail->cells.size()) {
      next_after = detail->cells[i].queue_position;
      break;
    }
  }
  response->set_next_page_token(PageToken(next_after));
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::GetResults(grpc::ServerContext* context,
                                          const onset::v1::GetResultsRequest* request,
                                          onset::v1::GetResultsResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kGetResults); !s.ok()) return s;
  absl::StatusOr<CellPage> page =
      ParsePage(request->page_size(), request->page_token(), kResultPageCells);
  if (!page.ok()) return common::ToGrpcStatus(page.status());
  absl::StatusOr<ResultPage> results = store_->Results(request->study(), *page);
  if (!results.ok()) return common::ToGrpcStatus(results.status());
  int64_t next_after = results->next_after;
  size_t bytes = 0;
  for (size_t i = 0; i < results->results.size(); ++i) {
    const CellResult& r = results->results[i];
    onset::v1::CellResult* out = response->add_results();
    ToProto(r.cell, out->mutable_cell());
    for (const auto& [name, value] : r.final_metrics) (*out->mutable_final_metrics())[name] = value;
    bytes += out->ByteSizeLong();
    if (bytes > kMaxCellsReplyBytes && i + 1 < results->results.size()) {
      next_after = r.cell.queue_position;
      break;
    }
  }
  response->set_next_page_token(PageToken(next_after));
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::CancelCells(grpc::ServerContext* context,
                                           const onset::v1::CancelCellsRequest* request,
                                           onset::v1::CancelCellsResponse* response) {
  common::Caller caller;
  if (grpc::Status s = auth_->Check(*context, method_roles::kCancelCells, &caller); !s.ok())
    return s;
  if (request->cell_ids_size() > kMaxCellIdsPerRequest) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "cell_ids: " + std::to_string(request->cell_ids_size()) + " ids, at most " +
                            std::to_string(kMaxCellIdsPerRequest) +
                            " a call (cancel a whole study by naming none)");
  }
  // A cell may be named by a unique prefix of its id.
  absl::StatusOr<std::vector<std::string>> ids = store_->ResolveCellIds(
      request->study(), {request->cell_ids().begin(), request->cell_ids().end()});
  if (!ids.ok()) return common::ToGrpcStatus(ids.status());
  absl::StatusOr<int> n = store_->CancelCells(request->study(), *ids);
  if (!n.ok()) return common::ToGrpcStatus(n.status());
  Audit(*store_, caller, context->peer(), "cancel", request->study(),
        std::to_string(*n) + " cells cancelled (" +
            (request->cell_ids().empty() ? std::string("the whole study")
                                         : std::to_string(ids->size()) + " named") +
            ")");
  response->set_cancelled(*n);
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::RerunCells(grpc::ServerContext* context,
                                          const onset::v1::RerunCellsRequest* request,
                                          onset::v1::RerunCellsResponse* response) {
  common::Caller caller;
  if (grpc::Status s = auth_->Check(*context, method_roles::kRerunCells, &caller); !s.ok())
    return s;
  std::vector<std::optional<CellState>> named;
  for (int s : request->states()) named.push_back(FromWire(static_cast<onset::v1::CellState>(s)));
  absl::StatusOr<std::vector<CellState>> states = RerunStates(named);
  if (!states.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(states.status().message()));
  }
  RerunRequest rerun;
  rerun.study = request->study();
  rerun.states = *std::move(states);
  rerun.where = {request->where().begin(), request->where().end()};
  if (request->cell_ids_size() > kMaxCellIdsPerRequest) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "cell_ids: " + std::to_string(request->cell_ids_size()) + " ids, at most " +
                            std::to_string(kMaxCellIdsPerRequest) + " a call");
  }
  absl::StatusOr<std::vector<std::string>> ids = store_->ResolveCellIds(
      request->study(), {request->cell_ids().begin(), request->cell_ids().end()});
  if (!ids.ok()) return common::ToGrpcStatus(ids.status());
  rerun.cell_ids = *std::move(ids);
  rerun.fresh = request->fresh();
  absl::StatusOr<int> n = store_->RerunCells(rerun);
  if (!n.ok()) return common::ToGrpcStatus(n.status());
  Audit(*store_, caller, context->peer(), "rerun", request->study(),
        std::to_string(*n) + " cells queued again" + (rerun.fresh ? ", fresh" : ""));
  response->set_queued(*n);
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::WatchStudy(
    grpc::ServerContext* context, const onset::v1::WatchStudyRequest* request,
    grpc::ServerWriter<onset::v1::WatchStudyResponse>* writer) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kWatchStudy); !s.ok()) return s;
  if (request->after_seq() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "after_seq: must not be negative");
  }
  auto write = [&](const onset::v1::WatchStudyResponse& out) {
    // False once the client has gone, or stopped reading for the limit (watchdog_).
    return watchdog_.Write(context, writer, out, stalled_reader_limit_);
  };
  auto send = [&](const WatchUpdate& update) {
    onset::v1::WatchStudyResponse out;
    out.set_snapshot_more(update.snapshot_more);
    if (update.snapshot) {
      ToProto(update.snapshot->study, out.mutable_snapshot()->mutable_study());
      // A piece of the snapshot past kMaxCellsReplyBytes goes as several messages, all but the
      // last saying that more follows.
      size_t bytes = out.ByteSizeLong();
      for (const CellInfo& cell : update.snapshot->cells) {
        if (bytes > kMaxCellsReplyBytes) {
          onset::v1::WatchStudyResponse part = out;
          part.set_snapshot_more(true);
          part.set_last_seq(update.last_seq);
          ToProto(update.study, part.mutable_study());
          if (!write(part)) return false;
          out.mutable_snapshot()->clear_cells();
          bytes = out.ByteSizeLong();
        }
        onset::v1::Cell* added = out.mutable_snapshot()->add_cells();
        ToProto(cell, added);
        bytes += added->ByteSizeLong();
      }
    }
    out.set_last_seq(update.last_seq);
    for (const CellEvent& e : update.events) ToProto(e, out.add_events());
    for (const CellInfo& cell : update.progress) {
      onset::v1::CellProgress* p = out.add_progress();
      p->set_cell_id(cell.id);
      p->set_tokens_done(cell.tokens_done);
      p->set_tokens_budget(cell.tokens_budget);
      p->set_tokens_per_second(cell.tokens_per_second);
      if (cell.latest_loss) p->set_latest_loss(*cell.latest_loss);
    }
    ToProto(update.study, out.mutable_study());
    return write(out);
  };
  auto stopped = [&] { return stopping_.load() || context->IsCancelled(); };
  return common::ToGrpcStatus(coordinator::WatchStudy(*store_, *store_, request->study(),
                                                      request->after_seq(), send, stopped));
}

grpc::Status StudyServiceImpl::ReadLogs(grpc::ServerContext* context,
                                        const onset::v1::ReadLogsRequest* request,
                                        onset::v1::ReadLogsResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kReadLogs); !s.ok()) return s;
  constexpr int kMaxLimit = 10'000;
  constexpr int kMaxWaitMs = 30'000;
  if (request->limit() < 0 || request->limit() > kMaxLimit) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "limit: must be 0..10000 (0 = 1000)");
  }
  if (request->wait_ms() < 0 || request->wait_ms() > kMaxWaitMs) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "wait_ms: must be 0..30000");
  }
  if (request->attempt() < 0 || request->after_line() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "attempt and after_line: must not be negative");
  }
  LogQuery query;
  query.study = request->study();
  query.cell = request->cell_id();
  query.attempt = request->attempt();
  query.after_line = request->after_line();
  query.limit = request->limit() == 0 ? 1000 : request->limit();
  auto stopped = [&] { return stopping_.load() || context->IsCancelled(); };
  absl::StatusOr<LogChunk> chunk =
      ReadLogsWaiting(*store_, *store_, query, request->wait_ms(), stopped);
  if (!chunk.ok()) return common::ToGrpcStatus(chunk.status());
  response->set_study(chunk->study);
  response->set_cell_id(chunk->cell_id);
  response->set_attempt(chunk->attempt);
  response->set_latest_attempt(chunk->latest_attempt);
  response->set_worker_id(chunk->worker_id);
  response->set_ended(chunk->ended);
  response->set_cell_state(ToWire(chunk->cell_state));
  response->set_first_line(chunk->first_line);
  for (const LogLine& line : chunk->lines) {
    onset::v1::LogLine* out = response->add_lines();
    out->set_line(line.line);
    out->set_at_unix_ms(line.at_unix_ms);
    out->set_text(line.text);
  }
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::StreamMetrics(grpc::ServerContext* context,
                                             const onset::v1::StreamMetricsRequest* request,
                                             grpc::ServerWriter<onset::v1::MetricsChunk>* writer) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kStreamMetrics); !s.ok()) return s;
  constexpr int kChunkPoints = 10'000;
  onset::v1::MetricsChunk chunk;
  onset::v1::CellCurve* curve = nullptr;
  int points = 0;
  bool client_gone = false;
  auto flush = [&] {
    if (chunk.curves_size() > 0 &&
        !watchdog_.Write(context, writer, chunk, stalled_reader_limit_)) {
      client_gone = true;
    }
    chunk.Clear();
    curve = nullptr;
    points = 0;
  };
  const std::vector<std::string> metrics(request->metrics().begin(), request->metrics().end());
  if (request->cell_ids_size() > kMaxCellIdsPerRequest) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "cell_ids: " + std::to_string(request->cell_ids_size()) + " ids, at most " +
                            std::to_string(kMaxCellIdsPerRequest) +
                            " a call (every cell of the study when none is named)");
  }
  absl::StatusOr<std::vector<std::string>> cells = store_->ResolveCellIds(
      request->study(), {request->cell_ids().begin(), request->cell_ids().end()});
  if (!cells.ok()) return common::ToGrpcStatus(cells.status());
  absl::Status status = store_->ForEachMetricPoint(
      request->study(), metrics, *cells,
      [&](const std::string& cell, const std::string& metric, int64_t tokens, double value,
          int64_t at_unix_ms) {
        if (curve == nullptr || curve->cell_id() != cell || curve->metric() != metric) {
          curve = chunk.add_curves();
          curve->set_cell_id(cell);
          curve->set_metric(metric);
        }
        curve->add_tokens(tokens);
        curve->add_values(value);
        curve->add_at_unix_ms(at_unix_ms);
        if (++points >= kChunkPoints) flush();
        return !client_gone && !context->IsCancelled();
      });
  if (!status.ok()) return common::ToGrpcStatus(status);
  flush();
  if (client_gone) {
    return common::ToGrpcStatus(
        absl::CancelledError("the client stopped reading the metrics or went away"));
  }
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::DescribeCell(grpc::ServerContext* context,
                                            const onset::v1::DescribeCellRequest* request,
                                            onset::v1::DescribeCellResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kDescribeCell); !s.ok()) return s;
  if (request->cell_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cell_id: name a cell");
  }
  absl::StatusOr<std::vector<std::string>> ids =
      store_->ResolveCellIds(request->study(), {request->cell_id()});
  if (!ids.ok()) return common::ToGrpcStatus(ids.status());
  absl::StatusOr<CellOutputs> outputs = store_->DescribeCell(request->study(), ids->front());
  if (!outputs.ok()) return common::ToGrpcStatus(outputs.status());
  ToProto(outputs->cell, response->mutable_cell());
  response->set_config_json(outputs->config_json);
  // A study name that is not one path component (stored before that rule) names no path.
  absl::StatusOr<std::string> dir =
      CellCheckpointDir(checkpoint_root_, request->study(), outputs->cell.id);
  response->set_checkpoint_dir(dir.value_or(""));
  for (const ResumePoint& point : outputs->checkpoints) {
    onset::v1::CellCheckpoint* out = response->add_checkpoints();
    out->set_tokens(point.tokens);
    out->set_attempt(point.attempt);
    absl::StatusOr<std::string> path =
        CheckpointPath(checkpoint_root_, request->study(), outputs->cell.id, point.attempt,
                       point.own_dir, point.tokens);
    out->set_path(path.value_or(""));
    out->set_bytes(point.bytes);
    std::error_code ec;
    out->set_present(!out->path().empty() && std::filesystem::is_regular_file(out->path(), ec));
  }
  for (const CellExport& e : outputs->exports) {
    onset::v1::CellExport* out = response->add_exports();
    out->set_format(e.format);
    out->set_host(e.host);
    out->set_path(e.path);
    out->set_bytes(e.bytes);
    out->set_tokens(e.tokens);
    out->set_at_unix_ms(e.at_unix_ms);
  }
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::RecordExport(grpc::ServerContext* context,
                                            const onset::v1::RecordExportRequest* request,
                                            onset::v1::RecordExportResponse* /*response*/) {
  common::Caller caller;
  if (grpc::Status s = auth_->Check(*context, method_roles::kRecordExport, &caller); !s.ok())
    return s;
  const onset::v1::CellExport& e = request->exported();
  const auto invalid = [](const std::string& message) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
  };
  // Shown in a terminal: no control characters (protobuf has checked the UTF-8).
  const auto printable = [](const std::string& text) {
    return std::none_of(text.begin(), text.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  };
  if (request->cell_id().empty()) return invalid("cell_id: name a cell");
  if (e.format() != "safetensors" && e.format() != "hf") {
    return invalid("exported.format: must be safetensors or hf");
  }
  if (e.host().empty() || e.host().size() > 255 || !printable(e.host())) {
    return invalid("exported.host: must be 1 to 255 bytes without control characters");
  }
  if (e.path().empty() || e.path().front() != '/' || e.path().size() > 4096 ||
      !printable(e.path())) {
    return invalid(
        "exported.path: must be an absolute path of at most 4096 bytes without "
        "control characters");
  }
  if (e.bytes() < 0 || e.tokens() < 0) {
    return invalid("exported.bytes, exported.tokens: must not be negative");
  }
  absl::StatusOr<std::vector<std::string>> ids =
      store_->ResolveCellIds(request->study(), {request->cell_id()});
  if (!ids.ok()) return common::ToGrpcStatus(ids.status());
  if (absl::Status s =
          store_->RecordExport(request->study(), ids->front(),
                               {e.format(), e.host(), e.path(), e.bytes(), e.tokens(), 0});
      !s.ok()) {
    return common::ToGrpcStatus(s);
  }
  Audit(*store_, caller, context->peer(), "record-export", request->study(),
        "cell " + ids->front() + ": " + e.format() + " at " + e.host() + ":" + e.path());
  return grpc::Status::OK;
}

grpc::Status StudyServiceImpl::Backup(grpc::ServerContext* context,
                                      const onset::v1::BackupRequest* /*request*/,
                                      grpc::ServerWriter<onset::v1::BackupChunk>* writer) {
  common::Caller caller;
  if (grpc::Status s = auth_->Check(*context, method_roles::kBackup, &caller); !s.ok()) return s;
  Audit(*store_, caller, context->peer(), "backup", "", "a copy of the database requested");
  if (db_path_.empty() || db_path_ == ":memory:") {
    return common::ToGrpcStatus(absl::FailedPreconditionError(
        "this coordinator's database is not a file: nothing to back up"));
  }
  std::optional<common::Admission::Ticket> admitted = backups_.Enter(kBackupWait);
  if (!admitted) {
    return common::ToGrpcStatus(absl::UnavailableError(
        "the coordinator is busy taking another backup: try again once it is done"));
  }
  // The copy streams from one read transaction straight into the reply: nothing is written on
  // the coordinator's disk, and a client that stops reading loses the call (watchdog_).
  class ReplySink final : public db::SnapshotSink {
   public:
    ReplySink(grpc::ServerContext* context, grpc::ServerWriter<onset::v1::BackupChunk>* writer,
              WriteWatchdog* watchdog, std::chrono::milliseconds limit,
              onset::v1::BackupChunk first)
        : context_(context),
          writer_(writer),
          watchdog_(watchdog),
          limit_(limit),
          chunk_(std::move(first)) {}
    absl::Status Start(const db::SnapshotInfo& info) override {
      chunk_.set_total_bytes(info.bytes);
      return absl::OkStatus();
    }
    absl::Status Piece(int64_t offset, std::string_view bytes) override {
      chunk_.set_offset(offset);
      chunk_.set_data(bytes.data(), bytes.size());
      const bool written = watchdog_->Write(context_, writer_, chunk_, limit_);
      chunk_.Clear();  // the first chunk's header goes once
      if (!written) {
        return absl::CancelledError("the client stopped reading the backup or went away");
      }
      return absl::OkStatus();
    }

   private:
    grpc::ServerContext* const context_;
    grpc::ServerWriter<onset::v1::BackupChunk>* const writer_;
    WriteWatchdog* const watchdog_;
    const std::chrono::milliseconds limit_;
    onset::v1::BackupChunk chunk_;
  };
  onset::v1::BackupChunk first;
  first.set_taken_unix_ms(clock_.WallUnixMs());
  first.set_host(base::HostName(""));
  first.set_source("onsetd on " + base::HostName("an unnamed host") + " serving " + db_path_);
  for (const db::FileIdentity& held : db::HeldFiles(db_path_, others_held_)) {
    onset::v1::HeldFile* out = first.add_held_files();
    out->set_device(held.device);
    out->set_inode(held.inode);
    out->set_what(held.what);
  }
  ReplySink sink(context, writer, &watchdog_, stalled_reader_limit_, std::move(first));
  return common::ToGrpcStatus(db::StreamSnapshot(db_path_, sink));
}

}  // namespace onset::coordinator
