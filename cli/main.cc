// onset: submit studies, watch them, read results, or run one on this machine.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "cli/address.h"
#include "cli/analysis_commands.h"
#include "cli/cell_commands.h"
#include "cli/commands.h"
#include "cli/connect.h"
#include "cli/dashboard_command.h"
#include "cli/exit_codes.h"
#include "cli/follow_commands.h"
#include "cli/progress_bars.h"
#include "cli/run_command.h"
#include "cli/slurm_command.h"
#include "cli/study_client.h"
#include "common/client_security.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("onset"));
  spdlog::set_level(spdlog::level::warn);

  CLI::App app{"onset: scaling studies of hybrid attention language models"};
  app.require_subcommand(1);
  app.fallthrough();  // --coordinator may follow the subcommand too
  std::string coordinator;
  app.add_option("--coordinator", coordinator,
                 "coordinator host:port (else $ONSET_COORDINATOR, else the address of a running "
                 "`onset run` in ./onset-data, else its onset.db read-only for the commands that "
                 "only read, else 127.0.0.1:7070)");
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "file holding the coordinator's token (else $ONSET_TOKEN, else the file named by "
                 "$ONSET_TOKEN_FILE, else that of a running `onset run` in ./onset-data)");
  std::string tls_ca;
  app.add_option("--tls-ca", tls_ca,
                 "connect with TLS, trusting the PEM certificates in this file (env ONSET_TLS_CA)");
  bool json = false;
  std::string file;
  std::string study;

  bool dry_run = false;
  CLI::App* submit = app.add_subcommand("submit", "submit a study file");
  submit->add_option("FILE", file, "study file (YAML)")->required();
  submit->add_flag("--dry-run", dry_run,
                   "print the cells the file gives, new or existing, and write nothing");
  submit->add_flag("--json", json, "print JSON");

  CLI::App* status = app.add_subcommand("status", "list studies, or the cells of one study");
  status->add_option("STUDY", study, "study name");
  std::string status_states, status_where;
  status->add_option("--state", status_states, "only cells in these states, e.g. failed,backoff");
  status->add_option("--where", status_where,
                     "only cells whose axes match, e.g. arch=swa,window=16");
  status->add_flag("--json", json, "print JSON");

  std::vector<std::string> cells;
  CLI::App* cancel = app.add_subcommand(
      "cancel", "cancel cells that have not ended (every cell of the study when none is named)");
  cancel->add_option("STUDY", study, "study name")->required();
  cancel->add_option("CELL", cells, "cell ids");
  cancel->add_flag("--json", json, "print JSON");
  onset::cli::RerunOptions rerun_options;
  CLI::App* rerun = app.add_subcommand(
      "rerun", "queue ended cells again, resuming from their last checkpoint unless --fresh");
  rerun->add_option("STUDY", rerun_options.study, "study name")->required();
  rerun->add_option("CELL", rerun_options.cells, "only these cells");
  rerun->add_option("--state", rerun_options.states,
                    "comma-separated states to rerun (default failed,diverged,cancelled; also "
                    "succeeded, backoff)");
  rerun->add_option("--where", rerun_options.where,
                    "only cells whose axes match, e.g. arch=swa,window=16");
  rerun->add_flag("--fresh", rerun_options.fresh,
                  "start from scratch: discard the cells' checkpoints and metrics");
  rerun->add_flag("--json", rerun_options.json, "print JSON");
  onset::cli::WatchOptions watch_options;
  CLI::App* watch = app.add_subcommand(
      "watch", "follow a study live: every cell state change and the progress, until it ends");
  watch->add_option("STUDY", watch_options.study, "study name")->required();
  watch->add_flag("--follow", watch_options.follow,
                  "keep watching after every cell has ended (for cells added later)");
  watch->add_flag("--json", watch_options.json, "print each message as one JSON line");
  onset::cli::LogsOptions logs_options;
  std::vector<std::string> logs_args;
  CLI::App* logs = app.add_subcommand("logs", "a cell's trainer log (its stderr)");
  logs->add_option("CELL", logs_args, "[STUDY] CELL: the cell's id or a unique prefix of it")
      ->required()
      ->expected(1, 2);
  logs->add_flag("-f,--follow", logs_options.follow,
                 "keep printing new lines, and the cell's next attempts, until it ends");
  logs->add_option("--attempt", logs_options.attempt, "attempt number (default: the latest)")
      ->check(CLI::NonNegativeNumber);
  logs->add_option("--tail", logs_options.tail, "only the last N lines")
      ->check(CLI::NonNegativeNumber);
  logs->add_flag("--json", logs_options.json, "print each line as a JSON object");
  onset::cli::CompareOptions compare_options;
  CLI::App* compare = app.add_subcommand(
      "compare",
      "which cells reach a metric threshold in fewer tokens: tokens-to-threshold per "
      "group of cells (seeds aggregated), final value, speed-up against a baseline");
  compare->add_option("STUDY", compare_options.study, "study name")->required();
  compare
      ->add_option("--metric", compare_options.metric,
                   "metric name, e.g. niah/acc@512, niah/acc_beyond_window, eval/short_loss, "
                   "rh/max_full")
      ->required();
  compare->add_option("--threshold", compare_options.threshold, "the value to reach")
      ->type_name("FLOAT")
      ->required();
  compare
      ->add_option("--direction", compare_options.direction,
                   "up (reach from below) or down (fall to it); auto: down for losses")
      ->capture_default_str();
  compare->add_option("--by", compare_options.by,
                      "group by these axes, e.g. arch,pos (default: every axis but seed)");
  compare->add_option("--baseline", compare_options.baseline,
                      "speed-up against the group with this axis value, e.g. arch=full");
  compare
      ->add_option("--x", compare_options.x,
                   "count tokens, or training FLOPs (tokens x FLOPs per token): flops")
      ->check(CLI::IsMember({"tokens", "flops"}))
      ->capture_default_str();
  compare->add_flag("--json", compare_options.json, "print JSON");
  onset::cli::PlotCommandOptions plot_options;
  CLI::App* plot = app.add_subcommand(
      "plot",
      "a metric against tokens (log axis) as an SVG: one line per group of cells, the "
      "seeds' range shaded, the threshold dashed, groups that never reached it circled");
  plot->add_option("STUDY", plot_options.study, "study name")->required();
  plot->add_option("--metric", plot_options.metric, "metric name, e.g. niah/acc@512")->required();
  plot->add_option("--threshold", plot_options.threshold, "draw this value and each group's T(x)")
      ->type_name("FLOAT");
  plot->add_option("--by", plot_options.by, "group by these axes (default: every axis but seed)");
  plot->add_option("--direction", plot_options.direction, "as compare's")->capture_default_str();
  plot->add_option("--x", plot_options.x, "the x axis: tokens or flops (training FLOPs)")
      ->check(CLI::IsMember({"tokens", "flops"}))
      ->capture_default_str();
  plot->add_option("--title", plot_options.title, "the figure's title");
  plot->add_flag("--emergence", plot_options.emergence,
                 "draw each group's fraction of cells past --threshold against tokens "
                 "(Kaplan-Meier) instead of the metric");
  plot->add_option("--out", plot_options.out, "the SVG file to write ('-': stdout)")->required();
  onset::cli::FitOptions fit_options;
  CLI::App* fit = app.add_subcommand(
      "fit", "fit L(D) = E + B (D/D0)^-beta to a loss against tokens per group of cells");
  fit->add_option("STUDY", fit_options.study, "study name")->required();
  fit->add_option("--metric", fit_options.metric, "a loss metric")->capture_default_str();
  fit->add_option("--by", fit_options.by, "group by these axes (default: every axis but seed)");
  fit->add_option("--min-tokens", fit_options.min_tokens,
                  "fit the points from this many tokens on (leave out the warm-up)")
      ->check(CLI::NonNegativeNumber);
  fit->add_flag("--json", fit_options.json, "print JSON");
  std::string heads_cell;
  int64_t heads_tokens = 0;
  CLI::App* heads = app.add_subcommand(
      "heads", "a cell's retrieval-head scores per layer and head at an eval point");
  heads->add_option("STUDY", study, "study name")->required();
  heads->add_option("CELL", heads_cell, "cell id")->required();
  heads
      ->add_option("--tokens", heads_tokens,
                   "the last eval point at or before this (default: "
                   "the last)")
      ->check(CLI::NonNegativeNumber);
  heads->add_flag("--json", json, "print JSON");
  onset::cli::ExportOptions export_options;
  std::string export_out;
  CLI::App* export_cmd =
      app.add_subcommand("export", "every metric point of a study's cells, as CSV or JSON lines");
  export_cmd->add_option("STUDY", export_options.study, "study name")->required();
  export_cmd->add_option("--format", export_options.format, "csv or jsonl")
      ->check(CLI::IsMember({"csv", "jsonl"}))
      ->capture_default_str();
  export_cmd->add_option("--metrics", export_options.metrics,
                         "only these metrics, comma-separated (default: all)");
  export_cmd->add_option("--out", export_out, "write to this file instead of stdout");
  CLI::App* workers = app.add_subcommand(
      "workers", "registered workers: host, devices, running jobs, time since last heard from");
  workers->add_flag("--json", json, "print JSON");
  CLI::App* results = app.add_subcommand("results", "final metrics of every cell of a study");
  results->add_option("STUDY", study, "study name")->required();
  results->add_flag("--json", json, "print JSON");

  onset::cli::RunOptions run_options;
  CLI::App* run = app.add_subcommand("run", "run a study on this machine until it finishes");
  run->add_option("FILE", run_options.file, "study file (YAML)")->required();
  run->add_option("--workers", run_options.workers,
                  "CPU slots: trainers run at once, fewer when cells need several (default: "
                  "cores/2, min 2)");
  run->add_option("--data-dir", run_options.data_dir, "database and work directory")
      ->capture_default_str();
  run->add_flag("--json", run_options.json, "print the results as JSON");
  run->add_flag(
      "--no-results", [&run_options](int64_t) { run_options.print_results = false; },
      "end without the results table (e.g. to follow with onset compare)");
  run->add_flag(
      "--verbose", [](int64_t) { spdlog::set_level(spdlog::level::info); },
      "log the coordinator and workers");

  onset::cli::SlurmUpOptions slurm_up_options;
  CLI::App* slurm = app.add_subcommand("slurm", "workers as Slurm jobs");
  slurm->require_subcommand(1);
  CLI::App* slurm_up = slurm->add_subcommand(
      "up",
      "submit one Slurm array of worker jobs (deploy/slurm/onset-worker.sbatch) sized to a "
      "study's queued cells; they exit once idle");
  slurm_up->add_option("STUDY", slurm_up_options.study, "study name")->required();
  slurm_up
      ->add_option("--max-jobs", slurm_up_options.max_jobs,
                   "at most this many worker jobs (array elements)")
      ->check(CLI::Range(1, onset::cli::kMaxArrayJobs))
      ->capture_default_str();
  slurm_up
      ->add_option("--cells-per-job", slurm_up_options.cells_per_job,
                   "cells one worker job runs at once: its GPUs (or CPU slots) divided by the "
                   "study's devices per cell")
      ->check(CLI::Range(1, onset::cli::kMaxArrayJobs))
      ->capture_default_str();
  slurm_up->add_option("--partition", slurm_up_options.partition, "the Slurm partition");
  slurm_up
      ->add_option("--sbatch-arg", slurm_up_options.sbatch_args,
                   "pass this to sbatch after onset's own arguments, which it overrides (repeat "
                   "it; write --sbatch-arg=--gres=gpu:8 for one that starts with -)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  slurm_up
      ->add_option("--exit-when-idle", slurm_up_options.exit_when_idle_s,
                   "seconds a worker waits without work before it exits")
      ->check(CLI::Range(1, onset::cli::kMaxExitWhenIdle))
      ->capture_default_str();
  slurm_up->add_flag("--allow-loopback", slurm_up_options.allow_loopback,
                     "submit although the coordinator's address is a loopback one (a Slurm "
                     "cluster on this machine only)");
  slurm_up->add_flag("--cpu", slurm_up_options.cpu,
                     "the workers offer CPU slots from their allocation instead of GPUs");
  slurm_up->add_option("--script", slurm_up_options.script,
                       "the job script (else $ONSET_SLURM_SCRIPT, else "
                       "deploy/slurm/onset-worker.sbatch next to this onset)");
  slurm_up->add_flag("--dry-run", slurm_up_options.dry_run,
                     "print the sbatch command and the settings it passes, run nothing");
  slurm_up->add_flag("--json", slurm_up_options.json, "print JSON");

  onset::cli::DashboardOptions dashboard_options;
  CLI::App* dashboard = app.add_subcommand(
      "dashboard", "serve the dashboard of ./onset-data's database, read-only, until Ctrl-C");
  dashboard->add_option("--http", dashboard_options.http, "loopback host:port to serve on")
      ->capture_default_str();
  dashboard->add_option("--data-dir", dashboard_options.data_dir, "the `onset run` data directory")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and the like exit 0; every usage error is "bad input".
    return app.exit(e) == 0 ? onset::cli::kExitOk : onset::cli::kExitBadInput;
  }

  static std::atomic<bool> interrupted{false};
  const auto take_signals = [] {
    // Signals are taken by one thread; every thread started later inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::thread([signals] {
      int sig = 0;
      sigwait(&signals, &sig);
      std::cerr << "stopping (again to exit at once)\n";
      interrupted = true;
      sigwait(&signals, &sig);
      _exit(130);
    }).detach();
  };
  if (run->parsed()) {
    take_signals();
    run_options.progress_bars = isatty(2) == 1;
    return onset::cli::RunCommand(run_options, interrupted, std::cout, std::cerr);
  }
  if (dashboard->parsed()) {
    if (!coordinator.empty()) {
      std::cerr << "--coordinator: onset dashboard serves ./onset-data's database; a coordinator "
                   "serves its own (onsetd --http)\n";
      return onset::cli::kExitBadInput;
    }
    take_signals();
    return onset::cli::DashboardCommand(dashboard_options, interrupted, std::cout, std::cerr);
  }

  const char* env_coordinator = std::getenv("ONSET_COORDINATOR");
  const onset::common::TokenSources token_sources = onset::cli::ClientTokenSources(
      token_file, coordinator, env_coordinator, onset::cli::kDefaultDataDir);
  absl::StatusOr<onset::common::ClientSecurity> security =
      onset::common::LoadClientSecurity(token_sources, tls_ca, /*require_token=*/false);
  if (!security.ok()) return onset::cli::ReportError(security.status(), std::cerr);
  // A coordinator; or, when none serves ./onset-data, its database read here (reads only).
  onset::cli::ConnectOptions connect_options;
  connect_options.coordinator = coordinator;
  connect_options.env = env_coordinator;
  connect_options.security = *security;
  for (CLI::App* writer : {submit, cancel, rerun, slurm_up}) {
    if (!writer->parsed()) continue;
    connect_options.writer = writer->get_name();
    if (writer == slurm_up) {
      connect_options.writer = "slurm up";
      connect_options.writer_needs = "starts workers, which lease their cells from a coordinator";
    }
    connect_options.probe_timeout = std::chrono::seconds(3);  // a busy run is still a run
  }
  absl::StatusOr<onset::cli::StudyConnection> connection =
      onset::cli::Connect(connect_options, std::cerr);
  if (!connection.ok()) {
    std::cerr << connection.status().message() << "\n";
    return onset::cli::kExitFailure;
  }
  onset::cli::StudyClient& client = *connection->client;
  if (submit->parsed()) {
    return onset::cli::SubmitCommand(client, file, dry_run, json, std::cout, std::cerr);
  }
  if (status->parsed()) {
    return onset::cli::StatusCommand(client, study, json, std::cout, std::cerr, status_states,
                                     status_where, onset::cli::Style::ForDescriptor(1));
  }
  if (watch->parsed()) {
    watch_options.style = onset::cli::Style::ForDescriptor(1);
    watch_options.progress_bars = isatty(1) == 1;
    watch_options.width = onset::cli::TerminalWidth(1);
    return onset::cli::WatchCommand(client, watch_options, std::cout, std::cerr);
  }
  if (compare->parsed()) {
    return onset::cli::CompareCommand(client, compare_options, std::cout, std::cerr);
  }
  if (heads->parsed()) {
    return onset::cli::HeadsCommand(client, study, heads_cell, heads_tokens, json, std::cout,
                                    std::cerr);
  }
  if (fit->parsed()) return onset::cli::FitCommand(client, fit_options, std::cout, std::cerr);
  if (plot->parsed()) {
    return onset::cli::PlotCommand(client, plot_options, std::cout, std::cerr);
  }
  if (export_cmd->parsed()) {
    if (export_out.empty()) {
      return onset::cli::ExportCommand(client, export_options, std::cout, std::cerr);
    }
    std::ofstream file(export_out, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "--out: cannot write " << export_out << "\n";
      return onset::cli::kExitFailure;
    }
    const int code = onset::cli::ExportCommand(client, export_options, file, std::cerr);
    file.close();
    if (!file) {
      std::cerr << "--out: writing " << export_out << " failed\n";
      return onset::cli::kExitFailure;
    }
    return code;
  }
  if (logs->parsed()) {
    logs_options.study = logs_args.size() == 2 ? logs_args[0] : "";
    logs_options.cell = logs_args.back();
    logs_options.style = onset::cli::Style::ForDescriptor(2);
    return onset::cli::LogsCommand(client, logs_options, std::cout, std::cerr);
  }
  if (workers->parsed()) return onset::cli::WorkersCommand(client, json, std::cout, std::cerr);
  if (slurm_up->parsed()) {
    const auto env = [](const char* name) {
      const char* value = std::getenv(name);
      return std::string(value == nullptr ? "" : value);
    };
    if (!env("ONSET_SBATCH").empty()) slurm_up_options.sbatch = env("ONSET_SBATCH");
    slurm_up_options.env_script = env("ONSET_SLURM_SCRIPT");
    slurm_up_options.env_bin = env("ONSET_BIN");
    std::error_code ec;
    slurm_up_options.executable = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) slurm_up_options.executable = argv[0];
    const onset::cli::WorkerAccess access = onset::cli::ResolveWorkerAccess(
        client.address(), token_sources, tls_ca.empty() ? env("ONSET_TLS_CA") : tls_ca);
    return onset::cli::SlurmUpCommand(client, slurm_up_options, access, std::cout, std::cerr);
  }
  if (cancel->parsed()) {
    return onset::cli::CancelCommand(client, study, cells, json, std::cout, std::cerr);
  }
  if (rerun->parsed()) return onset::cli::RerunCommand(client, rerun_options, std::cout, std::cerr);
  return onset::cli::ResultsCommand(client, study, json, std::cout, std::cerr);
}
