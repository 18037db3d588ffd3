#include "cli/tensorboard/tensorboard_export.h"

#include <cctype>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/durable_file.h"
#include "cli/tensorboard/event_file.h"
#include "proto/cell_names.h"

namespace onset::tensorboard {
namespace {

constexpr size_t kMaxPartBytes = 200;
constexpr char kSeedAxis[] = "seed";

std::string Safe(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, kMaxPartBytes)) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) ||
                      std::string_view("._-+=,@:").find(c) != std::string_view::npos;
    out += keep ? c : '_';
  }
  return out;
}

double Seconds(int64_t at_unix_ms) { return static_cast<double>(at_unix_ms) / 1000.0; }

// The "cell" text: markdown, as TensorBoard's text dashboard renders it.
std::string CellText(const std::string& study_name, const v1::Cell& cell,
                     const std::string* config) {
  std::string text =
      "study `" + study_name + "`, cell `" + cell.id() + "` (" +
      std::string(wire::StateName(cell.state())) + ", " + std::to_string(cell.tokens_done()) +
      " of " + std::to_string(cell.tokens_budget()) + " tokens)\n\n| axis | value |\n|---|---|\n";
  for (const auto& [axis, value] : std::map(cell.axes().begin(), cell.axes().end())) {
    text += "| " + axis + " | " + value + " |\n";
  }
  if (config != nullptr) {
    // Indented by four spaces: a code block, shown as it is.
    std::string pretty = nlohmann::json::parse(*config, nullptr, false).dump(2);
    text += "\nconfig:\n\n";
    size_t begin = 0;
    while (begin < pretty.size()) {
      size_t end = pretty.find('\n', begin);
      if (end == std::string::npos) end = pretty.size();
      text += "    " + pretty.substr(begin, end - begin) + "\n";
      begin = end + 1;
    }
  }
  return text;
}

}  // namespace

std::string RunDirectory(const v1::Cell& cell) {
  const std::map<std::string, std::string> axes(cell.axes().begin(), cell.axes().end());
  std::string group;
  for (const auto& [axis, value] : axes) {
    if (axis == kSeedAxis) continue;
    group += (group.empty() ? "" : ",") + axis + "=" + value;
  }
  std::string leaf = "id=" + cell.id();
  if (auto seed = axes.find(kSeedAxis); seed != axes.end()) {
    leaf = "seed=" + seed->second + "," + leaf;
  }
  return (group.empty() ? "" : Safe(group) + "/") + Safe(leaf);
}

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
    file.AddText("cell", 0, Seconds(first_ms),
                 CellText(cell.study().empty() ? study_name : cell.study(), cell,
                          config == configs.end() ? nullptr : &config->second));
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
    const std::string dir = out_dir + "/" + RunDirectory(cell);
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
