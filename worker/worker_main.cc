// onset-worker: leases jobs from the coordinator and runs onset-train for each.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "common/client_security.h"
#include "worker/coordinator_client.h"
#include "worker/devices.h"
#include "worker/idle_timer.h"
#include "worker/process_launcher.h"
#include "worker/slurm_job.h"
#include "worker/worker.h"

namespace {

std::string DefaultTrainer() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "onset-train";
  return (self.parent_path() / "onset-train").string();
}

std::string DefaultCoordinator() {
  const char* env = std::getenv("ONSET_COORDINATOR");
  return env != nullptr && *env != '\0' ? env : "127.0.0.1:7070";
}

// The command line, as given.
struct Flags {
  onset::worker::WorkerConfig config;
  int threads = 1;
  std::string devices = "cpu:1";
  int slots = 1;
  CLI::Option* slots_option = nullptr;
  double stop_grace_s = 60;
  double stall_timeout_s = 0;
  std::optional<double> exit_when_idle_s;
  std::string token_file;
  std::string tls_ca;
};

void AddFlags(CLI::App& app, Flags& f) {
  f.config.coordinator = DefaultCoordinator();
  f.config.trainer_path = DefaultTrainer();
  f.stall_timeout_s = std::chrono::duration<double>(f.config.stall_timeout).count();
  app.add_option("--coordinator", f.config.coordinator,
                 "coordinator host:port (env ONSET_COORDINATOR)")
      ->capture_default_str();
  app.add_option("--trainer", f.config.trainer_path, "the onset-train executable")
      ->capture_default_str();
  app.add_option("--checkpoint-root", f.config.checkpoint_root,
                 "the shared checkpoint directory of a coordinator started with --checkpoint-root: "
                 "jobs may keep checkpoints only under it or under --work-dir");
  app.add_option("--work-dir", f.config.work_dir, "directory for job attempts")
      ->capture_default_str();
  CLI::Option* devices_option = app.add_option(
      "--devices", f.devices,
      "what jobs run on: GPUs by CUDA index (cuda:0,1,3) or a number of CPU slots (cpu:4); a "
      "job takes as many as its cell needs");
  devices_option->capture_default_str();
  f.slots_option = app.add_option("--slots", f.slots,
                                  "jobs run at once on the CPU: the same as --devices cpu:N");
  f.slots_option->excludes(devices_option);
  app.add_option("--threads-per-job", f.threads, "CPU threads per trainer")->capture_default_str();
  app.add_option("--stop-grace", f.stop_grace_s,
                 "seconds a trainer gets to checkpoint after SIGTERM before it is killed (keep it "
                 "below the batch system's kill delay, e.g. Slurm's --signal=B:TERM@SECONDS)")
      ->check(CLI::Range(0.0, 24 * 3600.0))
      ->capture_default_str();
  app.add_option("--stall-timeout", f.stall_timeout_s,
                 "seconds a trainer may write no metrics line before it is stopped and its attempt "
                 "fails with \"no progress\" (0: never; keep it above the longest evaluation)")
      ->check(CLI::Range(0.0, 7.0 * 24 * 3600))
      ->capture_default_str();
  app.add_option("--exit-when-idle", f.exit_when_idle_s,
                 "exit once this worker has had nothing to do for SECONDS: no job ran here and "
                 "the coordinator had no queued cell it could run, now or later (a retry "
                 "backoff, a branch waiting for its trunk), status 0; or it could not be "
                 "reached for the last of that time, status 1. At most 604800 (7 days); "
                 "default: never");
  app.add_option("--token-file", f.token_file,
                 "file holding the coordinator's token (else $ONSET_TOKEN, else the file named "
                 "by $ONSET_TOKEN_FILE)");
  app.add_option("--tls-ca", f.tls_ca,
                 "connect with TLS, trusting the PEM certificates in this file (env ONSET_TLS_CA)");
}

// The worker's configuration from the parsed flags and the environment (the Slurm job it runs
// in); InvalidArgument saying which flag is wrong.
absl::StatusOr<onset::worker::WorkerConfig> ConfigFrom(Flags& f) {
  onset::worker::WorkerConfig config = f.config;
  config.threads_per_job = f.threads;
  if (f.exit_when_idle_s) {
    absl::StatusOr<std::chrono::milliseconds> idle =
        onset::worker::ExitWhenIdleFromSeconds(*f.exit_when_idle_s);
    if (!idle.ok()) return idle.status();
    config.exit_when_idle = *idle;
  }
  config.slurm_job = onset::worker::SlurmJobFromEnvironment(
      [](const char* name) -> const char* { return std::getenv(name); });
  config.terminate_grace = std::chrono::milliseconds(static_cast<int64_t>(f.stop_grace_s * 1000));
  config.stall_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.stall_timeout_s * 1000));
  std::string devices = f.devices;
  if (f.slots_option->count() > 0) {
    if (f.slots < 1) return absl::InvalidArgumentError("--slots: must be at least 1");
    devices = "cpu:" + std::to_string(f.slots);
  }
  absl::StatusOr<std::vector<std::string>> parsed = onset::worker::ParseDevices(devices);
  if (!parsed.ok()) return parsed.status();
  config.devices = *parsed;
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  return config;
}

// Blocks the signals that stop a worker (SIGINT, SIGTERM, SIGHUP: its terminal went away,
// SIGQUIT) in this thread, before any other starts (gRPC's included), so that every thread
// inherits the mask and only StopOnSignals' sigwait receives them.
sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Takes the blocked `signals` on a thread of their own. The first stops cleanly: trainers
// checkpoint and the cells are handed back. A later SIGINT (Ctrl-C again) or SIGQUIT kills the
// trainers and exits at once; a later SIGTERM or SIGHUP does not, because batch systems deliver
// SIGTERM more than once (Slurm signals every process of a job, and a job script forwards it
// too) and escalate with SIGKILL themselves. Whatever ends this process, SIGKILL included, its
// trainers die with it (they watch a socket it holds: base/trainer_contract.h kFlagSupervisorFd).
void StopOnSignals(onset::worker::Worker& worker, const sigset_t& signals) {
  std::thread([&worker, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("signal {} ({}): stopping (terminating running trainers)", sig, sigabbrev_np(sig));
    worker.Stop();
    while (true) {
      sigwait(&signals, &sig);
      if (sig == SIGINT || sig == SIGQUIT) break;
      spdlog::info("SIG{} again: still stopping (SIGINT exits at once)", sigabbrev_np(sig));
    }
    const int killed = onset::worker::KillAllChildren();
    spdlog::warn("SIG{} while stopping: killed {} trainers, exiting at once", sigabbrev_np(sig),
                 killed);
    _exit(130);
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("onset-worker"));
  CLI::App app{"onset-worker: runs onset-train for jobs leased from the coordinator"};
  Flags flags;
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  absl::StatusOr<onset::worker::WorkerConfig> config = ConfigFrom(flags);
  if (!config.ok()) {
    spdlog::error("bad configuration: {}", std::string(config.status().message()));
    return 2;
  }
  const sigset_t signals = BlockStopSignals();
  absl::StatusOr<onset::common::ClientSecurity> security = onset::common::LoadClientSecurity(
      onset::common::TokenSources::FromEnvironment(flags.token_file, ""), flags.tls_ca);
  if (!security.ok()) {
    spdlog::error("{}", std::string(security.status().message()));
    return 2;
  }

  onset::worker::PosixProcessLauncher launcher;
  std::unique_ptr<onset::worker::CoordinatorClient> client =
      onset::worker::NewGrpcCoordinatorClient(config->coordinator, *security);
  onset::worker::Worker worker(*config, client.get(), &launcher);
  StopOnSignals(worker, signals);
  absl::Status s = worker.Run();
  if (!s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 1;
  }
  return 0;
}
