#include "cli/local/run_command.h"

#include <unistd.h>

#include <algorithm>
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
#include "cli/views/progress_bars.h"
#include "cli/views/render.h"
#include "cli/views/trunk_view.h"
#include "common/auth_token.h"
#include "common/client_security.h"
#include "common/study_text.h"
#include "coordinator/server/coordinator_server.h"
#include "proto/cell_names.h"
#include "worker/coordinator_client.h"
#include "worker/process_launcher.h"
#include "worker/worker.h"

namespace onset::cli {
namespace {

namespace fs = std::filesystem;

std::string TrainerNextToSelf() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "onset-train" : (self.parent_path() / "onset-train").string();
}

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

// Removes the address file when the embedded coordinator goes away.
struct AddressFile {
  fs::path path;
  ~AddressFile() {
    std::error_code ec;
    if (!path.empty()) fs::remove(path, ec);
  }
};

}  // namespace

int DefaultWorkers(unsigned cores) {
  if (cores <= 2) return 2;
  return static_cast<int>(cores / 2);
}

int RunCommand(const RunOptions& options, const std::atomic<bool>& interrupted, std::ostream& out,
               std::ostream& err) {
  absl::StatusOr<std::string> text = common::ReadStudyFile(options.file);
  if (!text.ok()) return ReportError(text.status(), err);
  const std::string trainer =
      options.trainer_path.empty() ? TrainerNextToSelf() : options.trainer_path;
  if (access(trainer.c_str(), X_OK) != 0) {
    err << "onset-train not found at " << trainer << " (build it, or install it next to onset)\n";
    return 1;
  }
  std::error_code ec;
  fs::create_directories(options.data_dir, ec);
  if (ec) {
    err << "cannot create " << options.data_dir << ": " << ec.message() << "\n";
    return 1;
  }

  // The token is made on the first run and kept, so that `onset status` in another terminal finds
  // it next to the address file.
  const std::string token_file = (fs::path(options.data_dir) / common::kTokenFileName).string();
  absl::StatusOr<std::string> token = common::LoadOrCreateTokenFile(token_file);
  if (!token.ok()) {
    err << token.status().message() << "\n";
    return 1;
  }
  const common::ClientSecurity security{*token, ""};

  coordinator::ServerConfig server_config;
  server_config.db_path = (fs::path(options.data_dir) / "onset.db").string();
  server_config.token = *token;
  server_config.listen = "127.0.0.1:0";
  server_config.lease_ttl = std::chrono::seconds(30);
  server_config.heartbeat_interval = std::chrono::seconds(1);
  server_config.requeue_running_on_start = true;
  // One machine: every worker sees the data directory, so a WSD branch finds its trunk's
  // checkpoint there (docs/wsd-trunks.md).
  server_config.checkpoint_root = (fs::path(options.data_dir) / "checkpoints").string();
  auto server = coordinator::CoordinatorServer::Start(server_config);
  if (!server.ok()) {
    err << "cannot start the coordinator: " << server.status().message() << "\n";
    return 1;
  }
  const std::string address = (*server)->address();

  // `onset status` in another terminal finds the coordinator through this file.
  if (absl::Status written = WriteAddressFile(options.data_dir, address); !written.ok()) {
    err << written.message() << "\n";
    (*server)->Shutdown();
    return 1;
  }
  AddressFile address_file{fs::path(options.data_dir) / kAddressFileName};

  StudyClient client(address, security);
  absl::StatusOr<v1::SubmitStudyResponse> submitted =
      client.Submit(options.file, *text, StudyBaseDir(options.file));
  if (!submitted.ok()) {
    int code = ReportError(submitted.status(), err);
    (*server)->Shutdown();
    return code;
  }
  const std::string study = submitted->study().name();
  std::set<std::string> submitted_ids;
  for (const v1::Cell& cell : submitted->cells()) submitted_ids.insert(cell.id());
  err << "study " << study << ": " << CountCells(submitted->cells()) << ", "
      << submitted->cells_added() << " new (coordinator at " << address << ", data in "
      << options.data_dir << ")\n"
      << SharingSummary(*submitted);

  // One worker with a CPU slot per trainer run at once: a cell that needs several devices
  // (data-parallel ranks) takes several slots.
  const int n_slots =
      options.workers > 0 ? options.workers : DefaultWorkers(std::thread::hardware_concurrency());
  int most_devices = 1;
  for (const v1::Cell& cell : submitted->cells()) {
    if (cell.state() == v1::CELL_STATE_QUEUED || cell.state() == v1::CELL_STATE_BACKOFF) {
      most_devices = std::max(most_devices, cell.devices());
    }
  }
  if (most_devices > n_slots) {
    // They would wait forever for a bigger worker.
    err << "cells of " << study << " need " << most_devices << " devices each; run them with "
        << "--workers " << most_devices << " or more\n";
    (*server)->Shutdown();
    return 2;
  }
  worker::PosixProcessLauncher launcher;
  worker::WorkerConfig config;
  config.coordinator = address;
  config.trainer_path = trainer;
  config.work_dir = (fs::path(options.data_dir) / "work").string();
  config.checkpoint_root = server_config.checkpoint_root;
  config.devices.clear();
  for (int i = 0; i < n_slots; ++i) config.devices.push_back(absl::StrCat("cpu:", i));
  config.threads_per_job = 1;
  config.poll_interval = std::chrono::milliseconds(250);
  config.host = "onset-run";
  config.report_stopped = false;  // requeued by the coordinator on the next run
  std::unique_ptr<worker::CoordinatorClient> worker_client =
      worker::NewGrpcCoordinatorClient(address, security);
  worker::Worker embedded_worker(config, worker_client.get(), &launcher);
  std::thread worker_thread([&embedded_worker] { (void)embedded_worker.Run(); });

  // Progress until every cell has finished or we are interrupted.
  const bool live = options.progress_bars;
  const int width = TerminalWidth(2);
  LiveBlock block;
  std::string last_line;
  absl::Status poll_error;
  while (!interrupted) {
    absl::StatusOr<v1::GetStudyResponse> got = client.Get(study);
    if (!got.ok()) {
      poll_error = got.status();
      break;
    }
    KeepSubmitted(submitted_ids, &*got);
    if (live) {
      // On a terminal: a bar per running cell, redrawn in place.
      const std::string bars = ProgressBars(*got, width);
      if (bars != last_line) err << block.Redraw(bars) << std::flush;
      last_line = bars;
    } else {
      std::string line = ProgressLine(*got);
      if (line != last_line) {
        err << line << "\n";
        last_line = line;
      }
    }
    if (Finished(*got)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms));
  }

  embedded_worker.Stop();
  worker_thread.join();

  int code = 0;
  if (interrupted) {
    err << "interrupted: unfinished cells are kept and resume with the next `onset run "
        << options.file << "`\n";
    code = kExitInterrupted;
  } else if (!poll_error.ok()) {
    code = ReportError(poll_error, err);
  } else {
    absl::StatusOr<v1::GetResultsResponse> results = client.Results(study);
    if (!results.ok()) {
      code = ReportError(results.status(), err);
    } else {
      KeepSubmitted(submitted_ids, &*results);
      if (options.print_results) {
        out << (options.json ? ToJson(*results) : RenderResults(*results));
      }
      std::vector<std::string> failed;
      int diverged = 0;
      for (const v1::CellResult& r : results->results()) {
        // A diverged cell is a result (its loss was not finite), not a failure of the run.
        diverged += r.cell().state() == v1::CELL_STATE_DIVERGED ? 1 : 0;
        if (r.cell().state() != v1::CELL_STATE_SUCCEEDED &&
            r.cell().state() != v1::CELL_STATE_DIVERGED) {
          failed.push_back(absl::StrCat(r.cell().id(), " ", StateName(r.cell().state()), " (",
                                        r.cell().last_error(), ")"));
        }
      }
      if (diverged > 0) {
        err << diverged << " of " << results->results_size()
            << " cells diverged (the training loss stopped being finite)\n";
      }
      if (!failed.empty()) {
        err << failed.size() << " of " << results->results_size() << " cells did not finish:\n";
        for (const std::string& f : failed) err << "  " << f << "\n";
        code = kExitCellsFailed;
      }
    }
  }
  (*server)->Shutdown();
  return code;
}

}  // namespace onset::cli
