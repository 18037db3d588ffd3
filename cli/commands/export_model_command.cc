#include "cli/commands/export_model_command.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <system_error>

#include <CLI/CLI.hpp>

#include "base/durable_file.h"
#include "cli/commands/captured_process.h"
#include "cli/exit_codes.h"
#include "proto/cell_names.h"

#ifndef ONSET_DEFAULT_PYTHON
#define ONSET_DEFAULT_PYTHON "python3"
#endif

namespace onset::cli {
namespace {

namespace fs = std::filesystem;

// An export of a model of a few GB takes a while; a stuck one is killed.
constexpr std::chrono::minutes kExportTimeout{30};

std::string PythonToUse(const ExportModelOptions& options) {
  if (!options.python.empty()) return options.python;
  if (const char* env = std::getenv("ONSET_PYTHON"); env != nullptr && *env != '\0') return env;
  return ONSET_DEFAULT_PYTHON;
}

// A directory of its own under the system's temporary directory, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::error_code ec;
    std::string base = (fs::temp_directory_path(ec) / "onset-export-XXXXXX").string();
    if (::mkdtemp(base.data()) != nullptr) path_ = base;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs a step; on failure says which and what it printed, and returns false.
bool RunStep(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const char* what, std::ostream& err) {
  CaptureOptions run;
  run.argv = argv;
  run.set = env;
  run.timeout = kExportTimeout;
  absl::StatusOr<CapturedRun> result = RunCaptured(run);
  if (!result.ok()) {
    err << what << ": " << result.status().message() << "\n";
    return false;
  }
  if (!result->Succeeded()) {
    err << what << " (" << argv[0] << ") " << result->status.ToString() << ":\n"
        << result->err << result->out;
    return false;
  }
  return true;
}

// The checkpoint to export: --checkpoint, else the newest the cell recorded that is here, else
// the cell's checkpoint directory (onset-train takes its newest valid one). Empty with a message
// when there is none.
std::string ChooseCheckpoint(const ExportModelOptions& options,
                             const v1::DescribeCellResponse& cell, std::ostream& err) {
  if (!options.checkpoint.empty()) return options.checkpoint;
  std::error_code ec;
  for (const v1::CellCheckpoint& c : cell.checkpoints()) {
    if (!c.path().empty() && fs::exists(c.path(), ec)) return c.path();
  }
  if (!cell.checkpoint_dir().empty() && fs::is_directory(cell.checkpoint_dir(), ec)) {
    return cell.checkpoint_dir();
  }
  if (cell.checkpoints_size() == 0) {
    err << "cell " << cell.cell().id() << " has recorded no checkpoint yet ("
        << wire::StateName(cell.cell().state()) << ", " << cell.cell().tokens_done()
        << " tokens)\n";
  } else if (cell.checkpoint_dir().empty()) {
    err << "the coordinator keeps no checkpoints (no --checkpoint-root): they are in the work "
           "directory of the worker that ran cell "
        << cell.cell().id() << " (WORK/" << cell.cell().id()
        << "); name that directory or a ckpt-*.pt file with --checkpoint\n";
  } else {
    err << "cell " << cell.cell().id() << "'s checkpoints are not here (" << cell.checkpoint_dir()
        << "): run this where the checkpoint root is mounted, or name one with --checkpoint\n";
  }
  return "";
}

}  // namespace

int ExportModelCommand(StudyClient& client, const ExportModelOptions& options, std::ostream& out,
                       std::ostream& err) {
  if (options.format != "safetensors" && options.format != "hf") {
    err << "--format: must be safetensors or hf, got '" << options.format << "'\n";
    return kExitBadInput;
  }
  absl::StatusOr<v1::DescribeCellResponse> cell = client.DescribeCell(options.study, options.cell);
  if (!cell.ok()) return ReportError(cell.status(), err);
  if (cell->cell().role() == "trunk") {
    err << "cell " << cell->cell().id()
        << " is a WSD trunk, not a grid point: export one of its branches\n";
    return kExitBadInput;
  }
  const std::string checkpoint = ChooseCheckpoint(options, *cell, err);
  if (checkpoint.empty()) return kExitFailure;

  ScratchDir scratch;
  if (scratch.path().empty()) {
    err << "cannot create a temporary directory\n";
    return kExitFailure;
  }
  const std::string config = scratch.path() + "/cell.json";
  if (auto error = base::TryWriteFileDurably(config, cell->config_json())) {
    err << *error << "\n";
    return kExitFailure;
  }
  const bool hf = options.format == "hf";
  const std::string weights = hf ? scratch.path() + "/export" : options.out;
  const std::string trainer =
      options.trainer.empty() ? ProgramNextToSelf("onset-train") : options.trainer;
  if (!RunStep({trainer, "export", "--config", config, "--checkpoint", checkpoint, "--out", weights,
                "--dtype", options.dtype},
               {}, "onset-train export", err)) {
    return kExitFailure;
  }
  if (hf && !RunStep({PythonToUse(options), "-m", "onset.hf", weights, options.out}, {},
                     "converting to the Hugging Face format (python -m onset.hf; set "
                     "ONSET_PYTHON to a Python with the onset package: docs/python.md)",
                     err)) {
    return kExitFailure;
  }
  out << "cell " << cell->cell().id() << " (" << checkpoint << ") -> " << options.out
      << (hf ? " (Hugging Face transformers: AutoModelForCausalLM.from_pretrained(DIR, "
               "trust_remote_code=True))"
             : " (model.safetensors, config.json)")
      << "\n";
  return kExitOk;
}

void AddExportModelCommand(CLI::App& app, CommandTable& table) {
  auto options = std::make_shared<ExportModelOptions>();
  CLI::App* sub = app.add_subcommand(
      "export-model",
      "a trained cell's model as files other tools load: safetensors with onset's config, or a "
      "Hugging Face transformers directory (--format hf)");
  sub->add_option("STUDY", options->study, "study name")->required();
  sub->add_option("CELL", options->cell, "cell id, or a unique prefix of one")->required();
  sub->add_option("--out", options->out, "the directory to write")->required();
  sub->add_option("--format", options->format, "safetensors or hf")
      ->check(CLI::IsMember({"safetensors", "hf"}))
      ->capture_default_str();
  sub->add_option("--checkpoint", options->checkpoint,
                  "a checkpoint file or directory (default: the newest the cell recorded)");
  sub->add_option("--dtype", options->dtype, "f32 or bf16")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  sub->add_option("--trainer", options->trainer, "onset-train (default: next to onset)");
  sub->add_option("--python", options->python,
                  "the Python with the onset package, for --format hf (default: $ONSET_PYTHON, "
                  "else the build's virtual environment)");
  table.push_back({sub, Needs::kReader, "", "", [options](const CommandContext& c) {
                     return ExportModelCommand(*c.client, *options, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
