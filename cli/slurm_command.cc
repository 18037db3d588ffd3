#include "cli/slurm_command.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cli/captured_process.h"
#include "cli/commands.h"
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
    err << "sbatch failed (" << sbatch->Ending() << "): " << ShellCommand(plan.argv) << "\n"
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

}  // namespace onset::cli
