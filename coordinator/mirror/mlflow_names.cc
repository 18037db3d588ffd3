#include "coordinator/mirror/mlflow_names.h"

#include <cctype>
#include <functional>

#include <nlohmann/json.hpp>

namespace onset::coordinator {
namespace {

constexpr size_t kMaxParamValueBytes = 6000;
constexpr size_t kMaxNameBytes = 250;

bool ReadsAsAnotherPath(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.back() == '/') return true;
  if (name == "." || name == "..") return true;
  for (const char* bad : {"//", "/./", "/../"}) {
    if (name.find(bad) != std::string::npos) return true;
  }
  return name.rfind("./", 0) == 0 || name.rfind("../", 0) == 0 ||
         (name.size() >= 2 && name.compare(name.size() - 2, 2, "/.") == 0) ||
         (name.size() >= 3 && name.compare(name.size() - 3, 3, "/..") == 0);
}

}  // namespace

std::string MlflowName(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '@') {
      out += "_at_";
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
               c == '/' || c == ' ') {
      out += c;
    } else {
      out += '_';
    }
  }
  if (ReadsAsAnotherPath(out)) {
    for (char& c : out) {
      if (c == '/') c = '_';
    }
  }
  if (out.size() > kMaxNameBytes) out.resize(kMaxNameBytes);
  return out.empty() ? "_" : out;
}

std::vector<std::pair<std::string, std::string>> MlflowParams(
    const std::map<std::string, std::string>& axes, const std::string& config_json) {
  std::vector<std::pair<std::string, std::string>> params;
  auto add = [&](const std::string& key, std::string value) {
    if (value.size() > kMaxParamValueBytes)
      value = value.substr(0, kMaxParamValueBytes - 3) + "...";
    params.emplace_back(MlflowName(key), std::move(value));
  };
  for (const auto& [axis, value] : axes) add(axis, value);
  const nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return params;
  std::function<void(const std::string&, const nlohmann::json&)> walk =
      [&](const std::string& prefix, const nlohmann::json& node) {
        if (node.is_object() && !node.empty()) {
          for (const auto& [key, child] : node.items()) walk(prefix + "." + key, child);
        } else {
          add(prefix, node.is_string() ? node.get<std::string>() : node.dump());
        }
      };
  walk("config", config);
  return params;
}

const char* MlflowRunStatus(CellState state) {
  switch (state) {
    case CellState::kSucceeded:
      return "FINISHED";
    case CellState::kFailed:
    case CellState::kDiverged:
      return "FAILED";
    case CellState::kCancelled:
      return "KILLED";
    case CellState::kQueued:
    case CellState::kRunning:
    case CellState::kBackoff:
      break;
  }
  return "RUNNING";
}

}  // namespace onset::coordinator
