#include "cli/local/local_commands.h"

#include <unistd.h>

#include <memory>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "cli/exit_codes.h"
#include "cli/local/dashboard_command.h"
#include "cli/local/run_command.h"

namespace onset::cli {

void AddRunCommand(CLI::App& app, CommandTable& table) {
  auto run = std::make_shared<RunOptions>();
  CLI::App* run_app = app.add_subcommand("run", "run a study on this machine until it finishes");
  run_app->add_option("FILE", run->file, "study file (YAML)")->required();
  run_app->add_option("--workers", run->workers,
                      "CPU slots: trainers run at once, fewer when cells need several (default: "
                      "one per core, each trainer one thread)");
  run_app->add_option("--trainer", run->trainer_path,
                      "the trainer to run (default: onset-train next to onset); any program that "
                      "keeps onset-train's contract (docs/trainer.md)");
  run_app->add_option("--tensorboard", run->tensorboard_dir,
                      "write each cell's points as a TensorBoard run under DIR as they arrive "
                      "(tensorboard --logdir DIR shows the study while it runs)");
  run_app->add_option("--mlflow", run->mlflow_uri,
                      "mirror each cell as a run of the MLflow tracking server at this URL as its "
                      "points arrive (the study as the experiment; a token from "
                      "MLFLOW_TRACKING_TOKEN)");
  run_app->add_flag("--json", run->json, "print the results as JSON");
  run_app->add_flag(
      "--no-results", [run](int64_t) { run->print_results = false; },
      "end without the results table (e.g. to follow with onset compare)");
  run_app->add_flag(
      "--verbose", [](int64_t) { spdlog::set_level(spdlog::level::info); },
      "log the coordinator and workers");
  table.push_back({run_app, Needs::kNothing, "", "", [run](const CommandContext& c) {
                     RunOptions options = *run;
                     options.data_dir = c.data_dir;
                     options.progress_bars = isatty(2) == 1;
                     return RunCommand(options, *c.interrupted, *c.out, *c.err);
                   }});
}

void AddDashboardCommand(CLI::App& app, CommandTable& table) {
  auto dashboard = std::make_shared<DashboardOptions>();
  CLI::App* dashboard_app = app.add_subcommand(
      "dashboard", "serve the dashboard of the data directory's database, read-only, until Ctrl-C");
  dashboard_app->add_option("--http", dashboard->http, "loopback host:port to serve on")
      ->capture_default_str();
  table.push_back({dashboard_app, Needs::kNothing, "", "", [dashboard](const CommandContext& c) {
                     if (!c.flags->coordinator.empty()) {
                       *c.err << "--coordinator: onset dashboard serves the data directory's "
                                 "database; a coordinator serves its own (onsetd --http)\n";
                       return kExitBadInput;
                     }
                     DashboardOptions options = *dashboard;
                     options.data_dir = c.data_dir;
                     return DashboardCommand(options, *c.interrupted, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
