#include "cli/local/dispatch.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli/client/address.h"
#include "cli/exit_codes.h"
#include "cli/local/connect.h"
#include "common/client_security.h"
#include "worker/process_launcher.h"

namespace onset::cli {
namespace {

// Set once SIGINT, SIGTERM, SIGHUP (the terminal went away) or SIGQUIT arrives: the command
// stops cleanly. A second one kills every trainer this process started and exits at once. Were
// this process killed outright, its trainers would still die with it (they watch a socket it
// holds: base/trainer_contract.h kFlagSupervisorFd).
const std::atomic<bool>& TakeSignals() {
  static std::atomic<bool> interrupted{false};
  // Signals are taken by one thread; every thread started later inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    // After a hang-up there may be no terminal to write to; a failed write is harmless.
    std::cerr << "stopping (again to exit at once)\n";
    interrupted = true;
    sigwait(&signals, &sig);
    worker::KillAllChildren();
    _exit(kExitInterrupted);
  }).detach();
  return interrupted;
}

}  // namespace

int Dispatch(const Command& command, const GlobalFlags& flags, const std::string& program,
             std::ostream& out, std::ostream& err) {
  CommandContext context;
  context.flags = &flags;
  context.data_dir = DataDir(flags, std::getenv("ONSET_DATA_DIR"));
  context.program = program;
  context.out = &out;
  context.err = &err;
  if (command.needs == Needs::kNothing) {
    context.interrupted = &TakeSignals();
    return command.run(context);
  }
  if (command.needs == Needs::kScratch) {
    absl::StatusOr<StudyConnection> scratch = ConnectScratch();
    if (!scratch.ok()) return ReportError(scratch.status(), err);
    context.client = scratch->client.get();
    return command.run(context);
  }

  const char* env_coordinator = std::getenv("ONSET_COORDINATOR");
  context.token_sources =
      ClientTokenSources(flags.token_file, flags.coordinator, env_coordinator, context.data_dir);
  absl::StatusOr<common::ClientSecurity> security =
      common::LoadClientSecurity(context.token_sources, flags.tls_ca, /*require_token=*/false);
  if (!security.ok()) return ReportError(security.status(), err);
  ConnectOptions connect;
  connect.coordinator = flags.coordinator;
  connect.env = env_coordinator;
  connect.data_dir = context.data_dir;
  connect.security = *security;
  if (command.needs == Needs::kCoordinator) {
    connect.writer = command.name;
    connect.writer_needs = command.needs_why;
    connect.probe_timeout = std::chrono::seconds(3);  // a busy run is still a run
  }
  absl::StatusOr<StudyConnection> connection = Connect(connect, err);
  if (!connection.ok()) {
    err << connection.status().message() << "\n";
    if (!command.hint.empty()) err << command.hint << "\n";
    return kExitFailure;
  }
  context.client = connection->client.get();
  return command.run(context);
}

}  // namespace onset::cli
