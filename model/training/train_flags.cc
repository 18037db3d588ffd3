#include "model/training/train_flags.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/trainer_contract.h"
#include "model/command_flags.h"
#include "model/data/synthetic_data.h"

namespace onset::model {

std::optional<std::string> ParseTrainFlags(int argc, const char* const* argv, TrainFlags* out) {
  TrainFlags flags;
  CLI::App app{"", "onset-train"};
  app.add_option(trainer::kFlagConfig, flags.config_path)
      ->required()
      ->check(NotEmpty("must name a file"));
  app.add_option(trainer::kFlagMetricsFd, flags.metrics_fd)
      ->transform(WholeNumber(1, 1 << 20, "a file descriptor number >= 1"));
  app.add_option(trainer::kFlagDevice, flags.device)->check(OneOf({"auto", "cpu", "cuda"}));
  int threads = 0;
  app.add_option(trainer::kFlagThreads, threads)
      ->transform(WholeNumber(1, 1024, "an integer between 1 and 1024"));
  app.add_option(trainer::kFlagCheckpointDir, flags.checkpoint_dir)
      ->check(NotEmpty("must name a directory"));
  app.add_flag(trainer::kFlagResume, flags.resume);
  app.add_option(trainer::kFlagNproc, flags.nproc)
      ->transform(WholeNumber(1, 1024, "an integer between 1 and 1024"));
  app.add_option(trainer::kFlagDistTimeout, flags.dist_timeout_s)
      ->transform(WholeNumber(1, 7 * 24 * 3600, "a number of seconds between 1 and 604800"));
  app.add_option(trainer::kFlagAttentionBackend, flags.attention_backend)
      ->check(OneOf({"auto", "custom", "flash", "sdpa-band", "blocked", "math"}));
  app.add_option(trainer::kFlagBranchFrom, flags.branch_from)
      ->check(NotEmpty("must name a checkpoint file"));
  app.add_option(trainer::kFlagResumeFrom, flags.resume_from)
      ->check(NotEmpty("must name a checkpoint file"))
      ->excludes(app.get_option(trainer::kFlagResume));
  app.add_option(trainer::kFlagSupervisorFd, flags.supervisor_fd)
      ->transform(WholeNumber(0, 1 << 20, "a file descriptor number"));
  if (auto error = ParseFlags(app, argc, argv, &flags.help)) return error;
  if (app.count(trainer::kFlagThreads) > 0) flags.threads = threads;
  *out = std::move(flags);
  return std::nullopt;
}

std::vector<std::string> ArgsWithout(const char* flag, int argc, const char* const* argv) {
  const std::string with_value = std::string(flag) + "=";
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == flag) {
      ++i;  // and its value
    } else if (arg.rfind(with_value, 0) != 0) {
      args.push_back(arg);
    }
  }
  return args;
}

namespace {

std::optional<std::string> ReadJsonFile(const std::string& path, nlohmann::json* out) {
  std::ifstream in(path);
  if (!in) return path + ": cannot open: " + std::strerror(errno);
  std::stringstream text;
  text << in.rdbuf();
  try {
    *out = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at line 2, ..."
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return path + ": not valid JSON: " + what;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> LoadCellConfig(const std::string& path, CellConfig* out) {
  nlohmann::json j;
  if (auto error = ReadJsonFile(path, &j)) return error;
  CellConfig config;
  if (auto e = ParseCellConfig(j, &config)) return path + ": " + e->ToString();
  *out = std::move(config);
  return std::nullopt;
}

std::optional<std::string> LoadTrainConfig(const std::string& path, CellConfig* cell,
                                           std::optional<TrunkSpec>* trunk) {
  nlohmann::json j;
  if (auto error = ReadJsonFile(path, &j)) return error;
  if (!IsTrunkSpecJson(j)) {
    CellConfig config;
    if (auto e = ParseCellConfig(j, &config)) return path + ": " + e->ToString();
    *cell = std::move(config);
    trunk->reset();
    return std::nullopt;
  }
  TrunkSpec spec;
  if (auto e = ParseTrunkSpec(j, &spec)) return path + ": " + e->ToString();
  *cell = spec.cell;
  *trunk = std::move(spec);
  return std::nullopt;
}

}  // namespace onset::model
