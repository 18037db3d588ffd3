#include "cli/commands/export_model_command.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <system_error>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/checkpoint_name.h"
#include "base/durable_file.h"
#include "base/metric_names.h"
#include "base/posix_io.h"
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

// Runs a step; on failure says which and what it printed, and returns false. `out` (may be
// null) receives what it printed on stdout.
bool RunStep(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const char* what, std::ostream& err, std::string* out = nullptr) {
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
  if (out != nullptr) *out = result->out;
  return true;
}

// The last line of a step's output as a JSON object; null when it is none.
nlohmann::json LastJsonLine(const std::string& text) {
  size_t end = text.find_last_not_of("\n");
  if (end == std::string::npos) return nullptr;
  const size_t begin = text.rfind('\n', end);
  const std::string line = text.substr(begin == std::string::npos ? 0 : begin + 1,
                                       end + 1 - (begin == std::string::npos ? 0 : begin + 1));
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json(nullptr);
}

// Whether the cell's model reads a token file's ids rather than bytes.
bool ReadsTokenFile(const std::string& config_json) {
  const nlohmann::json config =
      nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object() || !config.contains("data") || !config["data"].is_object()) return false;
  const nlohmann::json& data = config["data"];
  return data.contains("background") && data["background"] == "file";
}

// `word` as one word of a POSIX shell: as it is when it holds only characters no shell treats
// specially, else in single quotes (a quote inside as '\'').
std::string ShellQuote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-./=,:@%+") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Writes DIR/lm_eval for the cell's checkpoint and prints how to run it; false (said) on failure.
bool WriteLmEvalTask(const ExportModelOptions& options, const std::string& trainer,
                     const std::string& config, const std::string& checkpoint,
                     const std::string& scratch, std::ostream& out, std::ostream& err) {
  const std::string prompts = scratch + "/prompts.jsonl";
  std::string decoded;
  if (!RunStep({trainer, "niah-prompts", "--config", config, "--checkpoint", checkpoint, "--out",
                prompts},
               {}, "onset-train niah-prompts", err, &decoded)) {
    return false;
  }
  const std::string task_dir = options.out + "/lm_eval";
  std::string written;
  if (!RunStep({PythonToUse(options), "-m", "onset.lm_eval_task", prompts, task_dir}, {},
               "writing the lm-eval task (python -m onset.lm_eval_task)", err, &written)) {
    return false;
  }
  const nlohmann::json summary = LastJsonLine(decoded), task = LastJsonLine(written);
  if (summary.is_null() || task.is_null() || !task.contains("max_length")) {
    err << "the lm-eval task was written to " << task_dir
        << ", but its summary could not be read\n";
    return false;
  }
  out << "lm-eval tasks -> " << task_dir << " (" << task.value("prompts", 0) << " prompts; onset's "
      << metric::kNiahAcc << " at this checkpoint: ";
  const nlohmann::json metrics = summary.value("metrics", nlohmann::json::object());
  if (metrics.contains(metric::kNiahAcc)) {
    out << metrics[metric::kNiahAcc].get<double>();
  } else {
    out << "none (no prompt within the training length)";
  }
  // The harness as the Python that wrote the task runs it (lm_eval need not be on PATH), with
  // absolute paths, quoted for a POSIX shell: the line runs as printed, from anywhere.
  std::error_code ec;
  const std::string model_dir = fs::absolute(options.out, ec).lexically_normal().string();
  out << "). Run:\n  " << ShellQuote(PythonToUse(options)) << " -m lm_eval --model hf"
      << " --model_args "
      << ShellQuote("pretrained=" + model_dir +
                    ",trust_remote_code=True,"
                    "max_length=" +
                    std::to_string(task["max_length"].get<int64_t>()))
      << " --include_path " << ShellQuote(model_dir + "/lm_eval")
      << " --tasks onset_niah --batch_size 1\n";
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

// The size of `path`: a file's, or the files' under a directory; 0 when it cannot be read.
int64_t SizeOf(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return static_cast<int64_t>(fs::file_size(path, ec));
  int64_t total = 0;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

// Tells the coordinator where the export is (RecordExport), so that `onset artifacts` lists it.
// A coordinator that cannot record it (the read-only view of a data directory no coordinator
// serves) costs a note, not the export.
void RecordTheExport(StudyClient& client, const ExportModelOptions& options,
                     const v1::DescribeCellResponse& cell, const std::string& checkpoint,
                     std::ostream& err) {
  v1::CellExport exported;
  exported.set_format(options.format);
  exported.set_host(base::HostName("localhost"));
  std::error_code ec;
  const fs::path absolute = fs::absolute(options.out, ec);
  exported.set_path(ec ? options.out : absolute.lexically_normal().string());
  exported.set_bytes(SizeOf(options.out));
  for (const v1::CellCheckpoint& c : cell.checkpoints()) {
    if (!c.path().empty() && fs::equivalent(c.path(), checkpoint, ec)) {
      exported.set_tokens(c.tokens());
      break;
    }
  }
  // A checkpoint the coordinator did not list (one given by --checkpoint, or found in a
  // directory): its name says its tokens.
  if (exported.tokens() == 0) {
    if (std::optional<int64_t> tokens = base::CheckpointTokens(checkpoint)) {
      exported.set_tokens(*tokens);
    }
  }
  if (absl::Status s = client.RecordExport(options.study, cell.cell().id(), exported); !s.ok()) {
    err << "note: the export was not recorded by the coordinator (" << s.message()
        << "), so onset artifacts will not list it\n";
  }
}

}  // namespace

int ExportModelCommand(StudyClient& client, const ExportModelOptions& options, std::ostream& out,
                       std::ostream& err) {
  if (options.format != "safetensors" && options.format != "hf") {
    err << "--format: must be safetensors or hf, got '" << options.format << "'\n";
    return kExitBadInput;
  }
  if (options.lm_eval && options.format != "hf") {
    err << "--lm-eval: the lm-eval task runs on the Hugging Face model: add --format hf\n";
    return kExitBadInput;
  }
  absl::StatusOr<v1::DescribeCellResponse> cell = client.DescribeCell(options.study, options.cell);
  if (!cell.ok()) return ReportError(cell.status(), err);
  if (options.lm_eval && ReadsTokenFile(cell->config_json())) {
    err << "--lm-eval: cell " << cell->cell().id()
        << " reads a token file's ids, which have no text the task could hold (its NIAH "
           "prompts as ids: onset-train niah-prompts; docs/lm-eval.md)\n";
    return kExitBadInput;
  }
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
  std::string exported;
  if (!RunStep({trainer, "export", "--config", config, "--checkpoint", checkpoint, "--out", weights,
                "--dtype", options.dtype},
               {}, "onset-train export", err, &exported)) {
    return kExitFailure;
  }
  // The file a directory resolved to ("FILE -> OUT/model.safetensors, ..."), so that the task's
  // answers come from the very checkpoint exported, even when a newer one lands meanwhile.
  const size_t arrow = exported.find(" -> ");
  const std::string exported_checkpoint =
      arrow == std::string::npos ? checkpoint : exported.substr(0, arrow);
  if (hf && !RunStep({PythonToUse(options), "-m", "onset.hf", weights, options.out}, {},
                     "converting to the Hugging Face format (python -m onset.hf; set "
                     "ONSET_PYTHON to a Python with the onset package: docs/python.md)",
                     err)) {
    return kExitFailure;
  }
  out << "cell " << cell->cell().id() << " (" << exported_checkpoint << ") -> " << options.out
      << (hf ? " (Hugging Face transformers: AutoModelForCausalLM.from_pretrained(DIR, "
               "trust_remote_code=True))"
             : " (model.safetensors, config.json)")
      << "\n";
  if (options.lm_eval &&
      !WriteLmEvalTask(options, trainer, config, exported_checkpoint, scratch.path(), out, err)) {
    return kExitFailure;
  }
  RecordTheExport(client, options, *cell, exported_checkpoint, err);
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
  sub->add_flag("--lm-eval", options->lm_eval,
                "with --format hf: also DIR/lm_eval, the lm-evaluation-harness tasks of the cell's "
                "NIAH prompts (docs/lm-eval.md)");
  sub->add_option("--trainer", options->trainer, "onset-train (default: next to onset)");
  sub->add_option("--python", options->python,
                  "the Python with the onset package, for --format hf (default: $ONSET_PYTHON, "
                  "else the build's virtual environment)");
  table.push_back({sub, Needs::kReader, "", "", [options](const CommandContext& c) {
                     return ExportModelCommand(*c.client, *options, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
