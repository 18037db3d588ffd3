#include "cli/commands/study_commands.h"

#include <chrono>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands/cell_commands.h"
#include "cli/views/render.h"
#include "cli/views/trunk_view.h"
#include "common/study_text.h"

namespace onset::cli {

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

void AddStudyCommands(CLI::App& app, CommandTable& table) {
  struct Flags {
    std::string file;
    std::string study;
    bool dry_run = false;
    bool json = false;
    std::string states;
    std::string where;
  };
  auto submit = std::make_shared<Flags>();
  CLI::App* submit_app = app.add_subcommand("submit", "submit a study file");
  submit_app->add_option("FILE", submit->file, "study file (YAML)")->required();
  submit_app->add_flag("--dry-run", submit->dry_run,
                       "print the cells the file gives, new or existing, and write nothing");
  submit_app->add_flag("--json", submit->json, "print JSON");
  table.push_back({submit_app, Needs::kCoordinator, "submit",
                   "changes studies, which only a coordinator does",
                   [submit](const CommandContext& c) {
                     return SubmitCommand(*c.client, submit->file, submit->dry_run, submit->json,
                                          *c.out, *c.err);
                   }});

  auto status = std::make_shared<Flags>();
  CLI::App* status_app = app.add_subcommand("status", "list studies, or the cells of one study");
  status_app->add_option("STUDY", status->study, "study name");
  status_app->add_option("--state", status->states,
                         "only cells in these states, e.g. failed,backoff");
  status_app->add_option("--where", status->where,
                         "only cells whose axes match, e.g. arch=swa,window=16");
  status_app->add_flag("--json", status->json, "print JSON");
  table.push_back({status_app, Needs::kReader, "", "", [status](const CommandContext& c) {
                     return StatusCommand(*c.client, status->study, status->json, *c.out, *c.err,
                                          status->states, status->where, Style::ForDescriptor(1));
                   }});
}

void AddWorkersAndResultsCommands(CLI::App& app, CommandTable& table) {
  auto json = std::make_shared<bool>(false);
  CLI::App* workers = app.add_subcommand(
      "workers", "registered workers: host, devices, running jobs, time since last heard from");
  workers->add_flag("--json", *json, "print JSON");
  table.push_back({workers, Needs::kReader, "", "", [json](const CommandContext& c) {
                     return WorkersCommand(*c.client, *json, *c.out, *c.err);
                   }});

  struct Flags {
    std::string study;
    bool json = false;
  };
  auto results = std::make_shared<Flags>();
  CLI::App* results_app = app.add_subcommand("results", "final metrics of every cell of a study");
  results_app->add_option("STUDY", results->study, "study name")->required();
  results_app->add_flag("--json", results->json, "print JSON");
  table.push_back({results_app, Needs::kReader, "", "", [results](const CommandContext& c) {
                     return ResultsCommand(*c.client, results->study, results->json, *c.out,
                                           *c.err);
                   }});
}

}  // namespace onset::cli
