#include "cli/commands/study_commands.h"

#include <chrono>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands/cell_commands.h"
#include "cli/views/cost_view.h"
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
                  std::ostream& out, std::ostream& err, const Throughput& throughput) {
  // A file that cannot be read exits 1; one that is not a study file (a directory, too large,
  // not UTF-8) exits 2, like any bad study file.
  absl::StatusOr<std::string> text = common::ReadStudyFile(file);
  if (!text.ok()) return ReportError(text.status(), err);
  absl::StatusOr<v1::SubmitStudyResponse> response =
      client.Submit(file, *text, StudyBaseDir(file), dry_run);
  if (!response.ok()) return ReportError(response.status(), err);
  if (json && dry_run) {
    nlohmann::json preview = nlohmann::json::parse(ToJson(*response));
    preview["cost"] =
        nlohmann::json::parse(CostJson(EstimateCost(*response, throughput), throughput));
    out << preview.dump(2) << "\n";
    return 0;
  }
  if (json) {
    out << ToJson(*response);
    return 0;
  }
  if (dry_run) {
    out << RenderSubmitPreview(*response) << "\n"
        << RenderCost(EstimateCost(*response, throughput), throughput);
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
                  const Style& style, const std::string& tag) {
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
  if (!study.empty() && !tag.empty()) {
    err << "--tag lists the studies that carry a tag: give no STUDY with it\n";
    return 2;
  }
  if (study.empty()) {
    absl::StatusOr<v1::ListStudiesResponse> list = client.List();
    if (!list.ok()) return ReportError(list.status(), err);
    if (!tag.empty()) {
      auto* studies = list->mutable_studies();
      studies->erase(std::remove_if(studies->begin(), studies->end(),
                                    [&](const v1::Study& s) {
                                      return std::find(s.tags().begin(), s.tags().end(), tag) ==
                                             s.tags().end();
                                    }),
                     studies->end());
    }
    out << (json ? ToJson(*list) : RenderStudyList(*list));
    return 0;
  }
  absl::StatusOr<v1::GetStudyResponse> got = client.Get(study);
  if (!got.ok()) return ReportError(got.status(), err);
  FilterCells(*state_filter, *where_filter, &*got);
  out << (json ? ToJson(*got) : RenderStudy(*got, style));
  return 0;
}

int WorkersCommand(StudyClient& client, bool json, std::ostream& out, std::ostream& err, bool all) {
  absl::StatusOr<v1::ListWorkersResponse> workers = client.Workers(all);
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

namespace {

// The throughput flags of a dry run (cli/views/cost_view.h).
struct CostFlags {
  double peak_flops = 0;
  double mfu = 0;
  double tokens_per_second = 0;
};

void AddCostFlags(CLI::App* app, CostFlags* flags) {
  app->add_option("--peak-flops", flags->peak_flops,
                  "a device's peak FLOP/s (e.g. 9.89e14), with --mfu: the device-hours the new "
                  "cells take");
  app->add_option("--mfu", flags->mfu, "the fraction of --peak-flops training reaches, e.g. 0.4");
  app->add_option("--tokens-per-second", flags->tokens_per_second,
                  "or: tokens one device trains per second (e.g. measured on finished cells)");
}

// The dry run of `file` with its cost at the flags' throughput; 2 for a bad throughput.
int DryRun(StudyClient& client, const std::string& file, bool json, const CostFlags& cost,
           std::ostream& out, std::ostream& err) {
  absl::StatusOr<Throughput> throughput =
      Throughput::From(cost.peak_flops, cost.mfu, cost.tokens_per_second);
  if (!throughput.ok()) return ReportError(throughput.status(), err);
  return SubmitCommand(client, file, /*dry_run=*/true, json, out, err, *throughput);
}

}  // namespace

void AddStudyCommands(CLI::App& app, CommandTable& table) {
  struct Flags {
    std::string file;
    std::string study;
    bool dry_run = false;
    bool json = false;
    std::string states;
    std::string where;
    std::string tag;
    CostFlags cost;
  };
  auto submit = std::make_shared<Flags>();
  CLI::App* submit_app = app.add_subcommand("submit", "submit a study file");
  submit_app->add_option("FILE", submit->file, "study file (YAML)")->required();
  submit_app->add_flag("--dry-run", submit->dry_run,
                       "print the cells the file gives, new or existing, and what the new ones "
                       "cost to train; write nothing");
  submit_app->add_flag("--json", submit->json, "print JSON");
  AddCostFlags(submit_app, &submit->cost);
  table.push_back(
      {submit_app, Needs::kCoordinator, "submit", "changes studies, which only a coordinator does",
       [submit](const CommandContext& c) {
         if (submit->dry_run) {
           return DryRun(*c.client, submit->file, submit->json, submit->cost, *c.out, *c.err);
         }
         return SubmitCommand(*c.client, submit->file, false, submit->json, *c.out, *c.err);
       }});

  table.back().hint = "to check a study file and its cost without a coordinator: onset check FILE";

  auto check = std::make_shared<Flags>();
  CLI::App* check_app = app.add_subcommand(
      "check",
      "check a study file without a coordinator: its cells, trunks, tokens to train and cost, "
      "planned as `onset run` and onsetd --checkpoint-root plan them (every cell new); write "
      "nothing");
  check_app->add_option("FILE", check->file, "study file (YAML)")->required();
  check_app->add_flag("--json", check->json, "print JSON");
  AddCostFlags(check_app, &check->cost);
  table.push_back({check_app, Needs::kScratch, "", "", [check](const CommandContext& c) {
                     return DryRun(*c.client, check->file, check->json, check->cost, *c.out,
                                   *c.err);
                   }});

  auto status = std::make_shared<Flags>();
  CLI::App* status_app = app.add_subcommand("status", "list studies, or the cells of one study");
  status_app->add_option("STUDY", status->study, "study name");
  status_app->add_option("--state", status->states,
                         "only cells in these states, e.g. failed,backoff");
  status_app->add_option("--where", status->where,
                         "only cells whose axes match, e.g. arch=swa,window=16");
  status_app->add_option("--tag", status->tag, "only the studies that carry this tag");
  status_app->add_flag("--json", status->json, "print JSON");
  table.push_back({status_app, Needs::kReader, "", "", [status](const CommandContext& c) {
                     return StatusCommand(*c.client, status->study, status->json, *c.out, *c.err,
                                          status->states, status->where, Style::ForDescriptor(1),
                                          status->tag);
                   }});
}

void AddWorkersAndResultsCommands(CLI::App& app, CommandTable& table) {
  struct WorkersFlags {
    bool json = false;
    bool all = false;
  };
  auto workers = std::make_shared<WorkersFlags>();
  CLI::App* workers_app = app.add_subcommand(
      "workers",
      "live workers: host, devices, running jobs, time since last heard from (--all: exited and "
      "silent ones too)");
  workers_app->add_flag("--json", workers->json, "print JSON");
  workers_app->add_flag("--all", workers->all,
                        "also the workers that exited, or were not heard from for 10 minutes");
  table.push_back({workers_app, Needs::kReader, "", "", [workers](const CommandContext& c) {
                     return WorkersCommand(*c.client, workers->json, *c.out, *c.err, workers->all);
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
