#include "coordinator/mirror/tensorboard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/durable_file.h"
#include "base/posix_io.h"
#include "common/status_macros.h"
#include "common/tensorboard/cell_run.h"
#include "common/tensorboard/event_file.h"
#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {
namespace {

double Seconds(int64_t unix_ms) { return static_cast<double>(unix_ms) / 1000.0; }

// The hparams session's end for a final state; nullopt while the cell may still run.
std::optional<tensorboard::HParamsStatus> SessionEnd(CellState state) {
  switch (state) {
    case CellState::kSucceeded:
      return tensorboard::STATUS_SUCCESS;
    case CellState::kFailed:
    case CellState::kDiverged:
      return tensorboard::STATUS_FAILURE;
    case CellState::kCancelled:
      return tensorboard::STATUS_UNKNOWN;
    case CellState::kQueued:
    case CellState::kRunning:
    case CellState::kBackoff:
      break;
  }
  return std::nullopt;
}

absl::Status AppendToFile(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::FailedPreconditionError("cannot open " + path + ": " + std::strerror(errno));
  }
  // A write that fails part-way is cut back to the file's size before it, so that the retry
  // never leaves half a record in front of whole ones.
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const int error = base::WriteAll(fd, bytes);
  if (error != 0 && size >= 0 && ::ftruncate(fd, size) != 0) {
    // Nothing more to do: the error below is reported either way.
  }
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (error != 0 || closed != 0) {
    return absl::FailedPreconditionError("cannot write " + path + ": " +
                                         std::strerror(error != 0 ? error : closed));
  }
  return absl::OkStatus();
}

struct Point {
  std::string metric;
  int64_t tokens;
  double value;
  int64_t at_unix_ms;
};

}  // namespace

TensorBoardWriter::TensorBoardWriter(std::string dir, ResultStore* store,
                                     const common::Clock* clock, size_t max_cells)
    : dir_(std::move(dir)), store_(store), clock_(clock), max_cells_(max_cells) {}

TensorBoardWriter::Run& TensorBoardWriter::RunOf(const std::string& study,
                                                 const std::string& cell_id) {
  auto key = std::make_pair(study, cell_id);
  if (auto it = runs_.find(key); it != runs_.end()) return it->second;
  if (runs_.size() >= max_cells_ && !runs_.empty()) {
    auto oldest = runs_.begin();
    for (auto it = runs_.begin(); it != runs_.end(); ++it) {
      if (it->second.last_sync < oldest->second.last_sync) oldest = it;
    }
    runs_.erase(oldest);
  }
  return runs_[key];
}

absl::Status TensorBoardWriter::Sync(const std::string& study, const std::string& cell_id) {
  ONSET_ASSIGN_OR_RETURN(CellOutputs described, store_->DescribeCell(study, cell_id));
  Run& run = RunOf(study, cell_id);
  run.last_sync = ++syncs_;

  std::vector<Point> fresh;
  std::map<std::string, int64_t> written = run.written;
  ONSET_RETURN_IF_ERROR(
      store_->ForEachMetricPoint(study, {}, {cell_id},
                                 [&](const std::string&, const std::string& metric, int64_t tokens,
                                     double value, int64_t at_unix_ms) {
                                   auto w = written.find(metric);
                                   if (w == written.end() || tokens > w->second) {
                                     fresh.push_back(Point{metric, tokens, value, at_unix_ms});
                                     written[metric] = tokens;
                                   }
                                   return true;
                                 }));
  const std::optional<tensorboard::HParamsStatus> end = SessionEnd(described.cell.state);
  const bool write_end = end.has_value() && !run.ended;
  if (run.file.empty() && fresh.empty()) return absl::OkStatus();  // no run without a point
  if (fresh.empty() && !write_end) return absl::OkStatus();

  const int64_t now_ms = clock_->WallUnixMs();
  std::string file = run.file;
  tensorboard::EventFile events;
  if (file.empty()) {
    tensorboard::CellRun cell;
    cell.study = study;
    cell.id = cell_id;
    cell.axes = described.cell.axes;
    cell.state = CellStateName(described.cell.state);
    cell.tokens_done = described.cell.tokens_done;
    cell.tokens_budget = described.cell.tokens_budget;
    cell.config_json = described.config_json;
    const std::string run_dir = dir_ + "/" + tensorboard::RunDirectory(cell.axes, cell_id);
    try {
      base::MakeDirs(run_dir);
    } catch (const std::runtime_error& e) {
      return absl::FailedPreconditionError(e.what());
    }
    char name[96];
    std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.onsetd.%d.%d",
                  static_cast<long long>(now_ms / 1000), static_cast<int>(::getpid()),
                  files_started_);
    file = run_dir + "/" + name;
    events = tensorboard::EventFile(Seconds(now_ms));
    events.AddText("cell", 0, Seconds(now_ms), tensorboard::CellText(cell));
    events.AddSessionStart(tensorboard::CellHParams(cell), tensorboard::CellGroup(cell),
                           Seconds(now_ms));
  }
  for (const Point& p : fresh) {
    events.AddScalar(p.metric, p.tokens, Seconds(p.at_unix_ms), p.value);
  }
  if (write_end) events.AddSessionEnd(*end, Seconds(now_ms));
  ONSET_RETURN_IF_ERROR(AppendToFile(file, events.bytes()));
  // Only once the bytes are in the file: a failed write is tried again whole.
  if (run.file.empty()) ++files_started_;
  run.file = file;
  run.written = std::move(written);
  run.ended = run.ended || write_end;
  return absl::OkStatus();
}

}  // namespace onset::coordinator
