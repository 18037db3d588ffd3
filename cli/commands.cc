#include "cli/commands.h"

#include <chrono>
#include <filesystem>

#include <google/protobuf/util/json_util.h>

#include "cli/cell_commands.h"
#include "cli/render.h"
#include "cli/trunk_view.h"
#include "common/study_text.h"

namespace onset::cli {

int ReportError(const absl::Status& status, std::ostream& err) {
  err << status.message() << "\n";
  const bool bad_input = status.code() == absl::StatusCode::kInvalidArgument ||
                         status.code() == absl::StatusCode::kFailedPrecondition;
  return bad_input ? 2 : 1;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}\n";
  return json;
}

std::string StudyBaseDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(path, ec).parent_path();
  if (ec) return "";
  std::filesystem::path canonical = std::filesystem::weakly_canonical(dir, ec);
  return (ec ? dir : canonical).string();
}

int SubmitCommand(StudyClient& client, const std::string& file, bool dry_run, bool json,
                  std::ostream& out, std::ostream& err) {
  // A file that cannot be read exits 1; one that is not a study file (a directory, too large,
  // not UTF-8) exits 2, like any bad study file.
  absl::StatusOr<std::string> text = common::ReadStudyFile(file);
  if (!text.ok()) return ReportError(text.status(), err);
  absl::StatusOr<v1::SubmitStudyResponse> response =
      client.Submit(file, *text, StudyBaseDir(file), dry_run);
  if (!response.ok()) return ReportError(response.status(), err);
  if (json) {
    out << ToJson(*response);
    return 0;
  }
  if (dry_run) {
    out << RenderSubmitPreview(*response);
    return 0;
  }
  out << "study " << StudySummary(response->study()) << "\n"
      << response->cells_size() << (response->cells_size() == 1 ? " cell, " : " cells, ")
      << response->cells_added() << " new\n"
      << SharingSummary(*response);
  return 0;
}

int StatusCommand(StudyClient& client, const std::string& study, bool json, std::ostream& out,
                  std::ostream& err, const std::string& states, const std::string& where,
                  const Style& style) {
  std::string error;
  std::optional<std::vector<v1::CellState>> state_filter = ParseAnyStates(states, &error);
  std::optional<std::map<std::string, std::string>> where_filter = ParseWhere(where, &error);
  if (!state_filter || !where_filter) {
    err << error << "\n";
    return 2;
  }
  if (study.empty() && (!state_filter->empty() || !where_filter->empty())) {
    err << "--state and --where filter the cells of one study: name it\n";
    return 2;
  }
  if (study.empty()) {
    absl::StatusOr<v1::ListStudiesResponse> list = client.List();
    if (!list.ok()) return ReportError(list.status(), err);
    out << (json ? ToJson(*list) : RenderStudyList(*list));
    return 0;
  }
  absl::StatusOr<v1::GetStudyResponse> got = client.Get(study);
  if (!got.ok()) return ReportError(got.status(), err);
  FilterCells(*state_filter, *where_filter, &*got);
  out << (json ? ToJson(*got) : RenderStudy(*got, style));
  return 0;
}

int WorkersCommand(StudyClient& client, bool json, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::ListWorkersResponse> workers = client.Workers();
  if (!workers.ok()) return ReportError(workers.status(), err);
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  out << (json ? ToJson(*workers) : RenderWorkers(*workers, now));
  return 0;
}

int ResultsCommand(StudyClient& client, const std::string& study, bool json, std::ostream& out,
                   std::ostream& err) {
  absl::StatusOr<v1::GetResultsResponse> results = client.Results(study);
  if (!results.ok()) return ReportError(results.status(), err);
  out << (json ? ToJson(*results) : RenderResults(*results));
  return 0;
}

}  // namespace onset::cli
