#include "model/export/export_app.h"

#include <cstdio>
#include <exception>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "base/durable_file.h"
#include "base/trainer_contract.h"
#include "model/command_flags.h"
#include "model/data/background.h"
#include "model/evaluation/decoding.h"
#include "model/evaluation/evaluator.h"
#include "model/export/export.h"
#include "model/export/niah_prompts.h"
#include "model/training/train_flags.h"

namespace onset::model {
namespace {

constexpr const char* kExport = "export";
constexpr const char* kDumpLogits = "dump-logits";
constexpr const char* kGenerate = "generate";
constexpr const char* kNiahPrompts = "niah-prompts";

std::optional<std::vector<int64_t>> ParseTokens(const std::string& text) {
  std::vector<int64_t> tokens;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    if (item.empty() || item.size() > 9 ||
        item.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    tokens.push_back(std::stoll(item));
    pos = comma + 1;
  }
  return tokens;
}

int RunExport(const ExportFlags& flags, const CellConfig& config) {
  Transformer model{nullptr};
  std::string path;
  if (auto error = LoadTrainedModel(config, flags.checkpoint, &model, &path)) {
    std::fprintf(stderr, "onset-train export: %s\n", error->c_str());
    return trainer::kExitUsage;
  }
  const at::ScalarType dtype = flags.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  WriteExport(flags.out_dir, ExportContents(model, config, dtype, path), config);
  std::fprintf(stdout, "%s -> %s/model.safetensors, %s/config.json\n", path.c_str(),
               flags.out_dir.c_str(), flags.out_dir.c_str());
  return trainer::kExitOk;
}

// The model of --checkpoint, for dump-logits and generate, after checking --tokens against its
// vocabulary; false (the error said) when either is wrong.
bool LoadForTokens(const ExportFlags& flags, const CellConfig& config, Transformer* model,
                   std::string* path) {
  for (int64_t t : flags.tokens) {
    if (t >= config.model.vocab_size) {
      std::fprintf(stderr,
                   "onset-train %s: --tokens: id %lld is not below the model's "
                   "vocabulary size %d\n",
                   flags.command.c_str(), static_cast<long long>(t), config.model.vocab_size);
      return false;
    }
  }
  if (auto error = LoadTrainedModel(config, flags.checkpoint, model, path)) {
    std::fprintf(stderr, "onset-train %s: %s\n", flags.command.c_str(), error->c_str());
    return false;
  }
  return true;
}

int RunDumpLogits(const ExportFlags& flags, const CellConfig& config) {
  Transformer model{nullptr};
  std::string path;
  if (!LoadForTokens(flags, config, &model, &path)) return trainer::kExitUsage;
  torch::NoGradGuard no_grad;
  const int64_t T = static_cast<int64_t>(flags.tokens.size());
  at::Tensor tokens = at::tensor(flags.tokens, at::kLong).view({1, T});  // (1, T)
  at::Tensor logits = model->forward(tokens).squeeze(0).contiguous();    // (T, V) float32
  nlohmann::json rows = nlohmann::json::array();
  const float* data = logits.data_ptr<float>();
  const int64_t V = logits.size(1);
  for (int64_t t = 0; t < T; ++t)
    rows.push_back(std::vector<float>(data + t * V, data + (t + 1) * V));
  const nlohmann::json out = {{"checkpoint", path}, {"tokens", flags.tokens}, {"logits", rows}};
  std::fprintf(stdout, "%s\n", out.dump().c_str());
  return trainer::kExitOk;
}

// Greedy decoding with the evaluator's own decoder (the cached one the NIAH probes use).
int RunGenerate(const ExportFlags& flags, const CellConfig& config) {
  if (flags.tokens.size() < 2) {
    std::fprintf(stderr, "onset-train generate: --tokens: give at least 2 tokens of prompt\n");
    return trainer::kExitUsage;
  }
  Transformer model{nullptr};
  std::string path;
  if (!LoadForTokens(flags, config, &model, &path)) return trainer::kExitUsage;
  torch::NoGradGuard no_grad;
  const int64_t L = static_cast<int64_t>(flags.tokens.size());
  at::Tensor prompt = at::tensor(flags.tokens, at::kLong).view({1, L});            // (1, L)
  at::Tensor generated = CachedGreedyDecode(model, prompt, flags.steps).view(-1);  // (S)
  const std::vector<int64_t> ids(generated.data_ptr<int64_t>(),
                                 generated.data_ptr<int64_t>() + generated.numel());
  const nlohmann::json out = {{"checkpoint", path}, {"tokens", flags.tokens}, {"generated", ids}};
  std::fprintf(stdout, "%s\n", out.dump().c_str());
  return trainer::kExitOk;
}

// The cell's headline NIAH prompts as JSON lines (niah_prompts.h), decoded by the model of
// --checkpoint when one is given.
int RunNiahPrompts(const ExportFlags& flags, const CellConfig& config) {
  std::string error;
  std::optional<Backgrounds> backgrounds = OpenCellBackgrounds(config, &error);
  if (!backgrounds) {
    std::fprintf(stderr, "onset-train niah-prompts: %s: %s\n", flags.config_path.c_str(),
                 error.c_str());
    return trainer::kExitUsage;
  }
  const SyntheticData data(config.data, config.model.seq_len, backgrounds->heldout);
  const Evaluator evaluator(config, data, at::Device(at::kCPU));
  if (evaluator.headline().empty()) {
    std::fprintf(stderr,
                 "onset-train niah-prompts: %s: the cell has no NIAH prompts (eval.niah_lengths, "
                 "eval.niah_depths and eval.niah_samples give none long enough)\n",
                 flags.config_path.c_str());
    return trainer::kExitUsage;
  }
  nlohmann::json summary = nlohmann::json::object();
  Evaluator::Decoded decoded;
  const bool decode = !flags.checkpoint.empty();
  if (decode) {
    Transformer model{nullptr};
    std::string path;
    if (auto load_error = LoadTrainedModel(config, flags.checkpoint, &model, &path)) {
      std::fprintf(stderr, "onset-train niah-prompts: %s\n", load_error->c_str());
      return trainer::kExitUsage;
    }
    const std::map<std::string, double> metrics =
        evaluator.DecodeHeadline(model, config.train.precision == "bf16", &decoded);
    summary["checkpoint"] = path;
    summary["metrics"] = metrics;
  }
  const bool text = config.data.background != kBackgroundFile;
  std::string lines;
  size_t prompts = 0;
  int longest = 0;
  const std::vector<Evaluator::TaskGroup>& groups = evaluator.headline();
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t b = 0; b < groups[g].tasks.size(); ++b) {
      const std::vector<Token>* answer = decode ? &decoded.answers.at(g).at(b) : nullptr;
      lines += NiahPromptRecord(groups[g], b, text, answer).dump();
      lines += '\n';
      ++prompts;
      longest = std::max(longest, static_cast<int>(groups[g].tasks[b].prompt.size()));
    }
  }
  if (auto write_error = base::TryWriteFileDurably(flags.out_dir, lines)) {
    std::fprintf(stderr, "onset-train niah-prompts: %s\n", write_error->c_str());
    return trainer::kExitRuntimeError;
  }
  summary["out"] = flags.out_dir;
  summary["prompts"] = prompts;
  summary["max_length"] = longest + config.data.value_len;
  summary["vocabulary"] = text ? "bytes" : "ids";
  std::fprintf(stdout, "%s\n", summary.dump().c_str());
  return trainer::kExitOk;
}

}  // namespace

bool IsExportCommand(int argc, const char* const* argv) {
  if (argc < 2) return false;
  const std::string command = argv[1];
  return command == kExport || command == kDumpLogits || command == kGenerate ||
         command == kNiahPrompts;
}

std::optional<std::string> ParseExportFlags(int argc, const char* const* argv, ExportFlags* out) {
  if (!IsExportCommand(argc, argv)) {
    return "expected a subcommand: export, dump-logits, generate or niah-prompts";
  }
  ExportFlags flags;
  flags.command = argv[1];
  const bool is_export = flags.command == kExport;
  CLI::App app{"", flags.command};
  app.add_option("--config", flags.config_path)->required()->check(NotEmpty("must not be empty"));
  CLI::Option* checkpoint =
      app.add_option("--checkpoint", flags.checkpoint)->check(NotEmpty("must not be empty"));
  std::string tokens;
  int threads = 0;
  CLI::Option* threads_option = nullptr;  // all but export
  if (is_export) {
    checkpoint->required();
    app.add_option("--out", flags.out_dir)->required()->check(NotEmpty("must not be empty"));
    app.add_option("--dtype", flags.dtype)->check(OneOf({"f32", "bf16"}));
  } else if (flags.command == kNiahPrompts) {
    app.add_option("--out", flags.out_dir)->required()->check(NotEmpty("must not be empty"));
    threads_option = app.add_option("--threads", threads);
    threads_option->transform(WholeNumber(1, 1024, "an integer between 1 and 1024"));
  } else {
    checkpoint->required();
    app.add_option("--tokens", tokens)
        ->required()
        ->check(CLI::Validator(
            [](std::string& value) -> std::string {
              return ParseTokens(value) ? ""
                                        : "must be comma-separated token ids, got '" + value + "'";
            },
            ""));
    threads_option = app.add_option("--threads", threads);
    threads_option->transform(WholeNumber(1, 1024, "an integer between 1 and 1024"));
    if (flags.command == kGenerate) {
      app.add_option("--steps", flags.steps)
          ->required()
          ->transform(WholeNumber(1, 4096, "an integer between 1 and 4096"));
    }
  }
  // The subcommand stands where a program's name would.
  if (auto error = ParseFlags(app, argc - 1, argv + 1, &flags.help)) return error;
  if (!tokens.empty()) flags.tokens = *ParseTokens(tokens);
  if (threads_option != nullptr && threads_option->count() > 0) flags.threads = threads;
  *out = std::move(flags);
  return std::nullopt;
}

int ExportMain(int argc, char** argv) {
  ExportFlags flags;
  if (auto exit = ExitBeforeRunning(ParseExportFlags(argc, argv, &flags), flags, kExportUsage)) {
    return *exit;
  }
  CellConfig config;
  if (auto error = LoadCellConfig(flags.config_path, &config)) {
    std::fprintf(stderr, "onset-train %s: %s\n", flags.command.c_str(), error->c_str());
    return trainer::kExitUsage;
  }
  at::set_num_threads(flags.threads.value_or(1));
  try {
    if (flags.command == kExport) return RunExport(flags, config);
    if (flags.command == kGenerate) return RunGenerate(flags, config);
    if (flags.command == kNiahPrompts) return RunNiahPrompts(flags, config);
    return RunDumpLogits(flags, config);
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "onset-train %s: %s: %s\n", flags.command.c_str(),
                 flags.checkpoint.empty() ? flags.config_path.c_str() : flags.checkpoint.c_str(),
                 e.what_without_backtrace());
    return trainer::kExitRuntimeError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onset-train %s: %s: %s\n", flags.command.c_str(),
                 flags.checkpoint.empty() ? flags.config_path.c_str() : flags.checkpoint.c_str(),
                 e.what());
    return trainer::kExitRuntimeError;
  }
}

}  // namespace onset::model
