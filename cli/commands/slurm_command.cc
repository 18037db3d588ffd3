#include "cli/commands/slurm_command.h"

#include <cstdlib>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cli/commands/captured_process.h"
#include "cli/commands/study_commands.h"
#include "cli/exit_codes.h"

namespace onset::cli {
namespace {

std::string Plural(int64_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

}  // namespace

int SlurmUpCommand(StudyClient& client, const SlurmUpOptions& options, const WorkerAccess& access,
                   std::ostream& out, std::ostream& err, std::chrono::milliseconds sbatch_timeout) {
  // Every cell, trunks among them: NotFound, naming the study, when there is none.
  absl::StatusOr<v1::GetStudyResponse> study = client.Get(options.study);
  if (!study.ok()) return ReportError(study.status(), err);
  const int64_t queued = QueuedCells(*study);
  const int workers = ArraySize(queued, options.cells_per_job, options.max_jobs);
  if (workers == 0) {
    if (options.json) {
      out << nlohmann::json{{"job_id", nullptr},
                            {"workers", 0},
                            {"queued", 0},
                            {"command", nlohmann::json::array()}}
                 .dump(2)
          << "\n";
    } else {
      out << "study " << options.study << " has no queued cells: no workers submitted\n";
    }
    return kExitOk;
  }
  absl::StatusOr<std::string> script =
      FindWorkerScript(options.script, options.env_script, options.executable);
  if (!script.ok()) return ReportError(script.status(), err);
  if (IsLoopbackAddress(access.coordinator)) {
    if (!options.allow_loopback) {
      // Workers that cannot reach their coordinator would hold their nodes doing nothing.
      err << access.coordinator
          << " is a loopback address, which workers on other nodes cannot reach: pass "
             "--coordinator with a name the nodes resolve (and onsetd --listen there), or "
             "--allow-loopback when the cluster is this machine\n";
      return kExitBadInput;
    }
    err << "note: " << access.coordinator
        << " is a loopback address: only workers on this machine can reach it "
           "(--allow-loopback)\n";
  }
  if (access.token_from_env) {
    // sbatch would keep it in the job's stored environment, readable wherever job records are.
    err << "the token comes from ONSET_TOKEN, which Slurm would keep in every worker job's "
           "recorded environment: give the workers the token as a file (mode 0600) on storage "
           "the nodes share, with ONSET_TOKEN_FILE or --token-file\n";
    return kExitBadInput;
  }
  const SbatchPlan plan = PlanSbatch(options, workers, *script, access);
  const std::string cells =
      absl::StrCat(Plural(workers, "worker", "workers"), " for ",
                   Plural(queued, "queued cell", "queued cells"), " of study ", options.study);
  if (options.dry_run) {
    if (options.json) {
      out << nlohmann::json{{"job_id", nullptr},    {"workers", workers},      {"queued", queued},
                            {"command", plan.argv}, {"environment", plan.set}, {"dry_run", true}}
                 .dump(2)
          << "\n";
    } else {
      out << "would submit " << cells << ":\n" << DescribePlan(plan, access);
    }
    return kExitOk;
  }

  CaptureOptions run;
  run.argv = plan.argv;
  run.set = plan.set;
  run.unset = plan.unset;
  run.timeout = sbatch_timeout;
  absl::StatusOr<CapturedRun> sbatch = RunCaptured(run);
  if (!sbatch.ok()) {
    err << sbatch.status().message();
    if (absl::IsNotFound(sbatch.status())) {
      err << " (is this a Slurm login node? ONSET_SBATCH names another sbatch)";
    }
    err << "\n";
    return kExitFailure;
  }
  if (!sbatch->Succeeded()) {
    err << "sbatch failed (" << sbatch->status.ToString() << "): " << ShellCommand(plan.argv)
        << "\n"
        << sbatch->err;
    if (!sbatch->err.empty() && sbatch->err.back() != '\n') err << "\n";
    return kExitFailure;
  }
  absl::StatusOr<std::string> job_id = ParseJobId(sbatch->out);
  if (!job_id.ok()) {
    err << job_id.status().message() << ": " << ShellCommand(plan.argv) << "\n" << sbatch->err;
    return kExitFailure;
  }
  if (options.json) {
    out << nlohmann::json{{"job_id", *job_id},
                          {"workers", workers},
                          {"queued", queued},
                          {"command", plan.argv}}
               .dump(2)
        << "\n";
  } else {
    out << "submitted Slurm array job " << *job_id << ": " << cells << " (they exit after "
        << options.exit_when_idle_s << " s without work)\n";
  }
  return kExitOk;
}

void AddSlurmCommands(CLI::App& app, CommandTable& table) {
  auto up = std::make_shared<SlurmUpOptions>();
  CLI::App* slurm = app.add_subcommand("slurm", "workers as Slurm jobs");
  slurm->require_subcommand(1);
  CLI::App* up_app = slurm->add_subcommand(
      "up",
      "submit one Slurm array of worker jobs (deploy/slurm/onset-worker.sbatch) sized to a "
      "study's queued cells; they exit once idle");
  up_app->add_option("STUDY", up->study, "study name")->required();
  up_app->add_option("--max-jobs", up->max_jobs, "at most this many worker jobs (array elements)")
      ->check(CLI::Range(1, kMaxArrayJobs))
      ->capture_default_str();
  up_app
      ->add_option("--cells-per-job", up->cells_per_job,
                   "cells one worker job runs at once: its GPUs (or CPU slots) divided by the "
                   "study's devices per cell")
      ->check(CLI::Range(1, kMaxArrayJobs))
      ->capture_default_str();
  up_app->add_option("--partition", up->partition, "the Slurm partition");
  up_app
      ->add_option("--sbatch-arg", up->sbatch_args,
                   "pass this to sbatch after onset's own arguments, which it overrides (repeat "
                   "it; write --sbatch-arg=--gres=gpu:8 for one that starts with -)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  up_app
      ->add_option("--exit-when-idle", up->exit_when_idle_s,
                   "seconds a worker waits without work before it exits")
      ->check(CLI::Range(1, kMaxExitWhenIdle))
      ->capture_default_str();
  up_app->add_flag("--allow-loopback", up->allow_loopback,
                   "submit although the coordinator's address is a loopback one (a Slurm "
                   "cluster on this machine only)");
  up_app->add_flag("--cpu", up->cpu,
                   "the workers offer CPU slots from their allocation instead of GPUs");
  up_app->add_option("--script", up->script,
                     "the job script (else $ONSET_SLURM_SCRIPT, else "
                     "deploy/slurm/onset-worker.sbatch next to this onset)");
  up_app->add_flag("--dry-run", up->dry_run,
                   "print the sbatch command and the settings it passes, run nothing");
  up_app->add_flag("--json", up->json, "print JSON");
  table.push_back(
      {up_app, Needs::kCoordinator, "slurm up",
       "starts workers, which lease their cells from a coordinator", [up](const CommandContext& c) {
         const auto env = [](const char* name) {
           const char* value = std::getenv(name);
           return std::string(value == nullptr ? "" : value);
         };
         SlurmUpOptions options = *up;
         if (!env("ONSET_SBATCH").empty()) options.sbatch = env("ONSET_SBATCH");
         options.env_script = env("ONSET_SLURM_SCRIPT");
         options.env_bin = env("ONSET_BIN");
         std::error_code ec;
         options.executable = std::filesystem::read_symlink("/proc/self/exe", ec).string();
         if (ec) options.executable = c.program;
         const WorkerAccess access =
             ResolveWorkerAccess(c.client->address(), c.token_sources,
                                 c.flags->tls_ca.empty() ? env("ONSET_TLS_CA") : c.flags->tls_ca);
         return SlurmUpCommand(*c.client, options, access, *c.out, *c.err);
       }});
}

}  // namespace onset::cli
