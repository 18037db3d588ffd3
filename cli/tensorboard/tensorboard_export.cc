#include "cli/tensorboard/tensorboard_export.h"

#include <map>
#include <stdexcept>
#include <vector>

#include "base/durable_file.h"
#include "common/tensorboard/cell_run.h"
#include "common/tensorboard/event_file.h"
#include "proto/cell_names.h"

namespace onset::tensorboard {
namespace {

double Seconds(int64_t at_unix_ms) { return static_cast<double>(at_unix_ms) / 1000.0; }

CellRun RunOf(const std::string& study_name, const v1::Cell& cell, const std::string* config) {
  CellRun run;
  run.study = cell.study().empty() ? study_name : cell.study();
  run.id = cell.id();
  run.axes = std::map<std::string, std::string>(cell.axes().begin(), cell.axes().end());
  run.state = std::string(wire::StateName(cell.state()));
  run.tokens_done = cell.tokens_done();
  run.tokens_budget = cell.tokens_budget();
  if (config != nullptr) run.config_json = *config;
  return run;
}

}  // namespace

absl::Status WriteTensorBoard(const std::string& study_name, const v1::GetStudyResponse& study,
                              const analysis::Curves& curves, const analysis::CurveTimes* times,
                              const std::map<std::string, std::string>& configs,
                              const std::string& out_dir) {
  for (const v1::Cell& cell : study.cells()) {
    auto c = curves.find(cell.id());
    if (c == curves.end()) continue;
    const std::map<std::string, std::vector<int64_t>>* cell_times = nullptr;
    if (times != nullptr) {
      if (auto t = times->find(cell.id()); t != times->end()) cell_times = &t->second;
    }
    // The file is stamped with its earliest known time, else 0.
    int64_t first_ms = 0;
    if (cell_times != nullptr) {
      for (const auto& [metric, at] : *cell_times) {
        for (int64_t ms : at) {
          if (ms > 0 && (first_ms == 0 || ms < first_ms)) first_ms = ms;
        }
      }
    }
    EventFile file(Seconds(first_ms));
    auto config = configs.find(cell.id());
    const CellRun run =
        RunOf(study_name, cell, config == configs.end() ? nullptr : &config->second);
    file.AddText("cell", 0, Seconds(first_ms), CellText(run));
    file.AddSessionStart(CellHParams(run), CellGroup(run), Seconds(first_ms));
    for (const auto& [metric, points] : c->second) {
      const std::vector<int64_t>* at = nullptr;
      if (cell_times != nullptr) {
        if (auto m = cell_times->find(metric); m != cell_times->end()) at = &m->second;
      }
      for (size_t i = 0; i < points.size(); ++i) {
        const int64_t ms = at != nullptr && i < at->size() ? (*at)[i] : 0;
        file.AddScalar(metric, points[i].first, Seconds(ms), points[i].second);
      }
    }
    const std::string dir = out_dir + "/" + RunDirectory(run.axes, run.id);
    try {
      base::MakeDirs(dir);
    } catch (const std::runtime_error& e) {
      return absl::FailedPreconditionError(e.what());
    }
    if (auto error = base::TryWriteFileDurably(dir + "/" + kEventFileName, file.bytes())) {
      return absl::FailedPreconditionError(*error);
    }
  }
  return absl::OkStatus();
}

}  // namespace onset::tensorboard
