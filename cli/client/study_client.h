// The CLI's client of the coordinator's StudyService and AccessService (tokens, the audit log):
// deadlines on every call and errors that name the coordinator. Only this file pair,
// cli/local/run_command.cc, cli/local/connect.cc and cli/local/dashboard_command.cc (which hand it
// a read-only server's channel) touch gRPC.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/client_security.h"
#include "onset/v1/onset.grpc.pb.h"

namespace onset::cli {

// Thread-safe. Every call carries the token of `security` (over TLS when it has certificates).
// Errors keep gRPC's code; Unavailable and DeadlineExceeded that the coordinator did not send
// (common::SentByServer: the connection failed, or no answer came in time) read
// "cannot reach the coordinator at ADDR: ...", others "RPC to ADDR: message" except
// InvalidArgument, NotFound and FailedPrecondition, which carry the coordinator's message
// verbatim (it already says "file:line: key: problem", which study is missing or which stored
// cell a submission would change).
class StudyClient {
 public:
  StudyClient(std::string address, const common::ClientSecurity& security,
              std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Calls go over `channel`, which carries its own token (e.g. the channel of a
  // coordinator/server/read_only_server.h in this process); `address` only names the other end in
  // errors.
  StudyClient(std::string address, std::shared_ptr<grpc::Channel> channel,
              std::chrono::milliseconds timeout = std::chrono::seconds(30));

  const std::string& address() const { return address_; }

  // Whether a connection to the coordinator is up within `within`, connecting now if there is
  // none: false when nothing answers there (the connection is refused, fails its handshake or
  // takes longer). Makes no call; the connection is kept for the calls that follow.
  bool Connects(std::chrono::milliseconds within);

  // `base_dir`: the absolute directory of the study file (relative data paths resolve there).
  // `dry_run`: the coordinator checks and expands the file and writes nothing. The streamed
  // answer is put together into one message; DataLoss when it ends short.
  absl::StatusOr<v1::SubmitStudyResponse> Submit(const std::string& source_name,
                                                 const std::string& yaml,
                                                 const std::string& base_dir = "",
                                                 bool dry_run = false);
  // Every study, the oldest first, read page by page (one deadline per page).
  absl::StatusOr<v1::ListStudiesResponse> List();
  // The live workers; with `all`, every worker the coordinator keeps (exited ones too). One page
  // (the most recently seen first; `page_size` 0: the coordinator's default); the next one is
  // read with the response's next_page_token.
  absl::StatusOr<v1::ListWorkersResponse> Workers(bool all = false,
                                                  const std::string& page_token = "",
                                                  int page_size = 0);
  // The study with every cell, read page by page (one deadline per page); the counts are those
  // of the last page.
  absl::StatusOr<v1::GetStudyResponse> Get(const std::string& name);
  // Every cell's results, page by page.
  absl::StatusOr<v1::GetResultsResponse> Results(const std::string& study);
  absl::StatusOr<v1::CancelCellsResponse> Cancel(const std::string& study,
                                                 const std::vector<std::string>& cells);
  absl::StatusOr<v1::RerunCellsResponse> Rerun(const std::string& study,
                                               const std::vector<v1::CellState>& states,
                                               const std::map<std::string, std::string>& where,
                                               const std::vector<std::string>& cells, bool fresh);
  // One WatchStudy stream: calls `on_message` for each message until the stream ends, the
  // callback returns false (the call is then cancelled; returns OK) or the connection breaks
  // (Unavailable: resume with after_seq = the last message's last_seq). No deadline.
  absl::Status Watch(const std::string& study, int64_t after_seq,
                     const std::function<bool(const v1::WatchStudyResponse&)>& on_message);
  // Every point of `metrics` (all when empty) of the study's cells: cell -> metric -> curve;
  // with `times`, also when each point was measured.
  // (The types are analysis::Curves and analysis::CurveTimes.)
  using Curves =
      std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, double>>>>;
  using CurveTimes = std::map<std::string, std::map<std::string, std::vector<int64_t>>>;
  absl::StatusOr<Curves> Metrics(const std::string& study, const std::vector<std::string>& metrics,
                                 const std::vector<std::string>& cell_ids = {},
                                 CurveTimes* times = nullptr);
  // One cell with its config and checkpoints (an id or a unique prefix of one).
  // A consistent copy of the coordinator's database (the Backup call), handed to `on_chunk` chunk
  // by chunk (its error ends the call and is returned). The deadline is an hour: a large
  // database takes a while to copy and send.
  absl::Status Backup(const std::function<absl::Status(const v1::BackupChunk&)>& on_chunk);
  // Records an export of the cell (RecordExport).
  absl::Status RecordExport(const std::string& study, const std::string& cell_id,
                            const v1::CellExport& exported);
  absl::StatusOr<v1::DescribeCellResponse> DescribeCell(const std::string& study,
                                                        const std::string& cell_id);
  // ReadLogs; the deadline is the timeout plus the request's wait.
  absl::StatusOr<v1::ReadLogsResponse> ReadLogs(const v1::ReadLogsRequest& request);

  // The AccessService (admin tokens only): a new token of `role` with its secret, every token,
  // a token revoked, one page of the audit log.
  absl::StatusOr<v1::CreateTokenResponse> CreateToken(const std::string& name,
                                                      const std::string& role);
  absl::StatusOr<v1::ListTokensResponse> ListTokens();
  absl::StatusOr<v1::RevokeTokenResponse> RevokeToken(const std::string& name);
  absl::StatusOr<v1::ReadAuditResponse> ReadAudit(const v1::ReadAuditRequest& request);

 private:
  absl::Status Convert(const char* rpc, const grpc::Status& status) const;
  void SetDeadline(grpc::ClientContext* context) const;
  // For calls whose work grows with a whole study (submit, cancel, rerun): at least 5 minutes.
  void SetStudySizedDeadline(grpc::ClientContext* context) const;

  const std::string address_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::StudyService::Stub> stub_;
  std::unique_ptr<v1::AccessService::Stub> access_stub_;
};

}  // namespace onset::cli
