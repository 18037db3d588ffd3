#include "common/tensorboard/cell_run.h"

#include <cctype>
#include <string_view>

#include <nlohmann/json.hpp>

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

// The axes but the seed, "arch=swa,window=16".
std::string Group(const std::map<std::string, std::string>& axes) {
  std::string group;
  for (const auto& [axis, value] : axes) {
    if (axis == kSeedAxis) continue;
    group += (group.empty() ? "" : ",") + axis + "=" + value;
  }
  return group;
}

}  // namespace

std::string RunDirectory(const std::map<std::string, std::string>& axes, const std::string& id) {
  const std::string group = Group(axes);
  std::string leaf = "id=" + id;
  if (auto seed = axes.find(kSeedAxis); seed != axes.end()) {
    leaf = "seed=" + seed->second + "," + leaf;
  }
  return (group.empty() ? "" : Safe(group) + "/") + Safe(leaf);
}

std::string CellText(const CellRun& cell) {
  std::string text = "study `" + cell.study + "`, cell `" + cell.id + "` (" + cell.state + ", " +
                     std::to_string(cell.tokens_done) + " of " +
                     std::to_string(cell.tokens_budget) +
                     " tokens)\n\n| axis | value |\n|---|---|\n";
  for (const auto& [axis, value] : cell.axes) text += "| " + axis + " | " + value + " |\n";
  if (!cell.config_json.empty()) {
    // Indented by four spaces: a code block, shown as it is.
    const nlohmann::json parsed = nlohmann::json::parse(cell.config_json, nullptr, false);
    const std::string pretty = parsed.is_discarded() ? cell.config_json : parsed.dump(2);
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

std::map<std::string, HParamValue> CellHParams(const CellRun& cell) {
  std::map<std::string, HParamValue> hparams;
  for (const auto& [axis, value] : cell.axes) hparams[axis] = value;
  hparams["study"] = cell.study;
  return hparams;
}

std::string CellGroup(const CellRun& cell) { return cell.study + "/" + Group(cell.axes); }

}  // namespace onset::tensorboard
