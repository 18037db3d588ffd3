#include "cli/local/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/client/address.h"
#include "cli/client/study_client.h"
#include "cli/commands/study_commands.h"
#include "cli/exit_codes.h"
#include "cli/local/connect.h"
#include "cli/views/progress_bars.h"
#include "cli/views/progress_log.h"
#include "cli/views/render.h"
#include "cli/views/trunk_view.h"
#include "common/auth_token.h"
#include "common/client_security.h"
#include "common/clock.h"
#include "common/study_text.h"
#include "coordinator/server/coordinator_server.h"
#include "proto/cell_names.h"
#include "worker/attempt_dir.h"
#include "worker/coordinator_client.h"
#include "worker/process_launcher.h"
#include "worker/trainer_lock.h"
#include "worker/worker.h"

namespace onset::cli {
namespace {

namespace fs = std::filesystem;

// A study may also hold cells of earlier versions of its file; `onset run` follows and reports
// only the cells of the file it was given.
void KeepSubmitted(const std::set<std::string>& ids, v1::GetStudyResponse* study) {
  google::protobuf::RepeatedPtrField<v1::Cell> kept;
  for (v1::Cell& cell : *study->mutable_cells()) {
    if (ids.count(cell.id())) *kept.Add() = std::move(cell);
  }
  study->mutable_cells()->Swap(&kept);
}

void KeepSubmitted(const std::set<std::string>& ids, v1::GetResultsResponse* results) {
  google::protobuf::RepeatedPtrField<v1::CellResult> kept;
  for (v1::CellResult& result : *results->mutable_results()) {
    if (ids.count(result.cell().id())) *kept.Add() = std::move(result);
  }
  results->mutable_results()->Swap(&kept);
}

// Every cell has ended: succeeded, failed, diverged or cancelled (a cell in backoff will run
// again).
bool Finished(const v1::GetStudyResponse& study) {
  for (const v1::Cell& cell : study.cells()) {
    if (!wire::Ended(cell.state())) return false;
  }
  return true;
}

// The coordinator of `onset run`, in this process, on a loopback port that the data directory's
// address file names while it runs. Shutting it down (on destruction) removes the file.
class EmbeddedCoordinator {
 public:
  static absl::StatusOr<std::unique_ptr<EmbeddedCoordinator>> Start(const std::string& data_dir,
                                                                    const std::string& token,
                                                                    const RunOptions& options) {
    coordinator::ServerConfig config;
    config.tensorboard_dir = options.tensorboard_dir;
    config.mlflow_uri = options.mlflow_uri;
    if (const char* secret = std::getenv("MLFLOW_TRACKING_TOKEN"); secret != nullptr) {
      config.mlflow_token = secret;
    }
    config.db_path = (fs::path(data_dir) / "onset.db").string();
    config.token = token;
    config.token_file = (fs::path(data_dir) / common::kTokenFileName).string();
    config.listen = "127.0.0.1:0";
    config.lease_ttl = std::chrono::seconds(30);
    config.heartbeat_interval = std::chrono::seconds(1);
    config.requeue_running_on_start = true;
    // ... once the trainer the previous process left is gone: it watched that process and dies
    // with it, and this waits for its lock (worker/trainer_lock.h), killing it if need be.
    const std::string work_dir = (fs::path(data_dir) / "work").string();
    config.trainer_gone = [work_dir](const coordinator::RunningAttempt& attempt) {
      return worker::WaitForTrainerGone(
          worker::AttemptDirPath(work_dir, attempt.cell_id, attempt.attempt) /
              worker::kTrainerLockFile,
          std::chrono::seconds(10));
    };
    // One machine: every worker sees the data directory, so a WSD branch finds its trunk's
    // checkpoint there (docs/wsd-trunks.md).
    config.checkpoint_root = DataDirCheckpointRoot(data_dir);
    absl::StatusOr<std::unique_ptr<coordinator::CoordinatorServer>> server =
        coordinator::CoordinatorServer::Start(config);
    if (!server.ok()) {
      return absl::Status(server.status().code(), absl::StrCat("cannot start the coordinator: ",
                                                               server.status().message()));
    }
    std::unique_ptr<EmbeddedCoordinator> embedded(
        new EmbeddedCoordinator(std::move(*server), config.checkpoint_root));
    // `onset status` in another terminal finds the coordinator through this file.
    absl::Status written = WriteAddressFile(data_dir, embedded->address());
    if (!written.ok()) return written;
    embedded->address_file_ = fs::path(data_dir) / kAddressFileName;
    return embedded;
  }

  ~EmbeddedCoordinator() {
    server_->Shutdown();
    std::error_code ec;
    if (!address_file_.empty()) fs::remove(address_file_, ec);
  }

  const std::string& address() const { return server_->address(); }
  const std::string& checkpoint_root() const { return checkpoint_root_; }

 private:
  EmbeddedCoordinator(std::unique_ptr<coordinator::CoordinatorServer> server,
                      std::string checkpoint_root)
      : server_(std::move(server)), checkpoint_root_(std::move(checkpoint_root)) {}

  std::unique_ptr<coordinator::CoordinatorServer> server_;
  std::string checkpoint_root_;
  fs::path address_file_;
};

// The worker of `onset run`: one CPU slot per trainer run at once, running on its own thread
// until destroyed (which stops it; cells it was running are requeued by the next run).
class EmbeddedWorker {
 public:
  EmbeddedWorker(const EmbeddedCoordinator& coordinator, const common::ClientSecurity& security,
                 const std::string& trainer, const std::string& data_dir, int slots)
      : client_(worker::NewGrpcCoordinatorClient(coordinator.address(), security)),
        worker_(Config(coordinator, trainer, data_dir, slots), client_.get(), &launcher_),
        thread_([this] { (void)worker_.Run(); }) {}

  ~EmbeddedWorker() {
    worker_.Stop();
    thread_.join();
  }

 private:
  static worker::WorkerConfig Config(const EmbeddedCoordinator& coordinator,
                                     const std::string& trainer, const std::string& data_dir,
                                     int slots) {
    worker::WorkerConfig config;
    config.coordinator = coordinator.address();
    config.trainer_path = trainer;
    config.work_dir = (fs::path(data_dir) / "work").string();  // as the coordinator's above
    config.checkpoint_root = coordinator.checkpoint_root();
    config.devices.clear();
    for (int i = 0; i < slots; ++i) config.devices.push_back(absl::StrCat("cpu:", i));
    config.threads_per_job = 1;
    config.poll_interval = std::chrono::milliseconds(250);
    config.host = "onset-run";
    config.report_stopped = false;  // requeued by the coordinator on the next run
    return config;
  }

  worker::PosixProcessLauncher launcher_;
  std::unique_ptr<worker::CoordinatorClient> client_;
  worker::Worker worker_;
  std::thread thread_;
};

// The most devices a cell of the submission that still has to run needs.
int MostDevicesWaiting(const v1::SubmitStudyResponse& submitted) {
  int most = 1;
  for (const v1::Cell& cell : submitted.cells()) {
    if (cell.state() == v1::CELL_STATE_QUEUED || cell.state() == v1::CELL_STATE_BACKOFF) {
      most = std::max(most, cell.devices());
    }
  }
  return most;
}

// Shows the submitted cells' progress on `err` until every one has ended or `interrupted` is
// set; the error of a poll that failed.
absl::Status FollowProgress(StudyClient& client, const std::string& study,
                            const std::set<std::string>& ids, const RunOptions& options,
                            const std::atomic<bool>& interrupted, std::ostream& err) {
  const int width = TerminalWidth(2);
  LiveBlock block;
  ProgressLog log;
  std::string last_bars;
  while (!interrupted) {
    absl::StatusOr<v1::GetStudyResponse> got = client.Get(study);
    if (!got.ok()) return got.status();
    KeepSubmitted(ids, &*got);
    if (options.progress_bars) {
      // On a terminal: a bar per running cell, redrawn in place.
      const std::string bars = ProgressBars(*got, width);
      if (bars != last_bars) err << block.Redraw(bars) << std::flush;
      last_bars = bars;
    } else {
      // Off a terminal: a line when a cell changes state, else at most every 10 s.
      const auto now = common::SystemClock().MonotonicNow().time_since_epoch();
      err << log.Take(ProgressLine(*got),
                      std::chrono::duration_cast<std::chrono::milliseconds>(now).count())
          << std::flush;
    }
    if (Finished(*got)) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms));
  }
  return absl::OkStatus();
}

// Prints the submitted cells' results (unless options say not to), then on `err` how many
// diverged and which did not finish; the exit code: kExitCellsFailed when some did not.
int ReportResults(StudyClient& client, const std::string& study, const std::set<std::string>& ids,
                  const RunOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::GetResultsResponse> results = client.Results(study);
  if (!results.ok()) return ReportError(results.status(), err);
  KeepSubmitted(ids, &*results);
  if (options.print_results) out << (options.json ? ToJson(*results) : RenderResults(*results));
  std::vector<std::string> failed;
  int diverged = 0;
  for (const v1::CellResult& r : results->results()) {
    // A diverged cell is a result (its loss was not finite), not a failure of the run.
    diverged += r.cell().state() == v1::CELL_STATE_DIVERGED ? 1 : 0;
    if (r.cell().state() != v1::CELL_STATE_SUCCEEDED &&
        r.cell().state() != v1::CELL_STATE_DIVERGED) {
      failed.push_back(absl::StrCat(r.cell().id(), " ",
                                    std::string(wire::StateName(r.cell().state())), " (",
                                    r.cell().last_error(), ")"));
    }
  }
  if (diverged > 0) {
    err << diverged << " of " << results->results_size()
        << " cells diverged (the training loss stopped being finite)\n";
  }
  if (failed.empty()) return kExitOk;
  err << failed.size() << " of " << results->results_size() << " cells did not finish:\n";
  for (const std::string& f : failed) err << "  " << f << "\n";
  return kExitCellsFailed;
}

}  // namespace

int DefaultWorkers(unsigned cores) {
  // One single-threaded trainer per core: on 2 cores, two cells of one thread trained 1.3-1.5x
  // the tokens per second of one cell of two threads (docs/cpu-benchmark.md), small models'
  // steps being too short to share well between threads. Unknown (0): two.
  return cores == 0 ? 2 : static_cast<int>(cores);
}

int RunCommand(const RunOptions& options, const std::atomic<bool>& interrupted, std::ostream& out,
               std::ostream& err) {
  absl::StatusOr<std::string> text = common::ReadStudyFile(options.file);
  if (!text.ok()) return ReportError(text.status(), err);
  const std::string trainer =
      options.trainer_path.empty() ? ProgramNextToSelf("onset-train") : options.trainer_path;
  if (access(trainer.c_str(), X_OK) != 0) {
    err << "onset-train not found at " << trainer << " (build it, or install it next to onset)\n";
    return kExitFailure;
  }
  std::error_code ec;
  fs::create_directories(options.data_dir, ec);
  if (ec) {
    err << "cannot create " << options.data_dir << ": " << ec.message() << "\n";
    return kExitFailure;
  }
  // The token is made on the first run and kept, so that `onset status` in another terminal finds
  // it next to the address file.
  const std::string token_file = (fs::path(options.data_dir) / common::kTokenFileName).string();
  absl::StatusOr<std::string> token = common::LoadOrCreateTokenFile(token_file);
  if (!token.ok()) {
    err << token.status().message() << "\n";
    return kExitFailure;
  }
  const common::ClientSecurity security{*token, ""};
  absl::StatusOr<std::unique_ptr<EmbeddedCoordinator>> coordinator =
      EmbeddedCoordinator::Start(options.data_dir, *token, options);
  if (!coordinator.ok()) {
    err << coordinator.status().message() << "\n";
    return kExitFailure;
  }

  StudyClient client((*coordinator)->address(), security);
  absl::StatusOr<v1::SubmitStudyResponse> submitted =
      client.Submit(options.file, *text, StudyBaseDir(options.file));
  if (!submitted.ok()) return ReportError(submitted.status(), err);
  const std::string study = submitted->study().name();
  std::set<std::string> ids;
  for (const v1::Cell& cell : submitted->cells()) ids.insert(cell.id());
  err << "study " << study << ": " << CountCells(submitted->cells()) << ", "
      << submitted->cells_added() << " new (coordinator at " << (*coordinator)->address()
      << ", data in " << options.data_dir << ")\n"
      << SharingSummary(*submitted);

  // A cell that needs several devices (data-parallel ranks) takes several slots.
  const int slots =
      options.workers > 0 ? options.workers : DefaultWorkers(std::thread::hardware_concurrency());
  if (const int most = MostDevicesWaiting(*submitted); most > slots) {
    // They would wait forever for a bigger worker.
    err << "cells of " << study << " need " << most << " devices each; run them with "
        << "--workers " << most << " or more\n";
    return kExitBadInput;
  }
  absl::Status followed;
  {
    EmbeddedWorker worker(**coordinator, security, trainer, options.data_dir, slots);
    followed = FollowProgress(client, study, ids, options, interrupted, err);
  }
  if (interrupted) {
    err << "interrupted: unfinished cells are kept and resume with the next `onset run "
        << options.file << "`\n";
    return kExitInterrupted;
  }
  if (!followed.ok()) return ReportError(followed, err);
  return ReportResults(client, study, ids, options, out, err);
}

}  // namespace onset::cli
