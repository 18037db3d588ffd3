#include "model/training/train_flags.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "model/data/synthetic_data.h"

namespace onset::model {
namespace {

std::optional<int> ParseInt(const std::string& text, int lo, int hi) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  if (text.size() > 9) return std::nullopt;
  int v = std::stoi(text);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string> ParseTrainFlags(int argc, const char* const* argv, TrainFlags* out) {
  TrainFlags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      flags.help = true;
      continue;
    }
    if (arg == "--resume") {
      flags.resume = true;
      continue;
    }
    auto [name, value, has_value] = base::SplitFlag(arg);
    if (name != "--config" && name != "--metrics-fd" && name != "--device" && name != "--threads" &&
        name != "--checkpoint-dir" && name != "--nproc" && name != "--dist-timeout" &&
        name != "--attention-backend") {
      return "unknown argument '" + arg + "'";
    }
    if (!has_value) {
      if (i + 1 >= argc) return name + ": missing value";
      value = argv[++i];
    }
    if (name == "--config") {
      if (value.empty()) return "--config: must name a file";
      flags.config_path = value;
    } else if (name == "--metrics-fd") {
      auto fd = ParseInt(value, 1, 1 << 20);
      if (!fd) return "--metrics-fd: must be a file descriptor number >= 1, got '" + value + "'";
      flags.metrics_fd = *fd;
    } else if (name == "--device") {
      if (value != "auto" && value != "cpu" && value != "cuda")
        return "--device: must be auto, cpu or cuda, got '" + value + "'";
      flags.device = value;
    } else if (name == "--checkpoint-dir") {
      if (value.empty()) return "--checkpoint-dir: must name a directory";
      flags.checkpoint_dir = value;
    } else if (name == "--nproc") {
      auto n = ParseInt(value, 1, 1024);
      if (!n) return "--nproc: must be an integer between 1 and 1024, got '" + value + "'";
      flags.nproc = *n;
    } else if (name == "--attention-backend") {
      static const char* const kNames[] = {"auto", "custom", "flash", "sdpa-band", "blocked",
                                           "math"};
      bool known = false;
      for (const char* n : kNames) known = known || value == n;
      if (!known) {
        return "--attention-backend: must be auto, custom, flash, sdpa-band, blocked or math, "
               "got '" + value + "'";
      }
      flags.attention_backend = value;
    } else if (name == "--dist-timeout") {
      auto n = ParseInt(value, 1, 7 * 24 * 3600);
      if (!n) return "--dist-timeout: must be a number of seconds between 1 and 604800, got '" +
                     value + "'";
      flags.dist_timeout_s = *n;
    } else {
      auto n = ParseInt(value, 1, 1024);
      if (!n) return "--threads: must be an integer between 1 and 1024, got '" + value + "'";
      flags.threads = *n;
    }
  }
  if (!flags.help && flags.config_path.empty()) return "--config is required";
  *out = std::move(flags);
  return std::nullopt;
}

std::optional<std::string> LoadCellConfig(const std::string& path, CellConfig* out) {
  std::ifstream in(path);
  if (!in) return path + ": cannot open: " + std::strerror(errno);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at line 2, ..."
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return path + ": not valid JSON: " + what;
  }
  CellConfig config;
  if (auto e = ParseCellConfig(j, &config)) return path + ": " + e->ToString();
  *out = std::move(config);
  return std::nullopt;
}

}  // namespace onset::model
