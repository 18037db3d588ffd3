// onset-train's model subcommands, dispatched by onset-train (model/train_main.cc) on its first
// argument:
//
//   onset-train export --config CELL.json --checkpoint FILE|DIR --out DIR [--dtype f32|bf16]
//       writes DIR/model.safetensors and DIR/config.json (export.h, docs/export.md);
//   onset-train dump-logits --config CELL.json --checkpoint FILE|DIR --tokens 1,2,3
//       [--threads N]
//       prints {"checkpoint": ..., "tokens": [...], "logits": [[V floats] per token]} as one
//       JSON line on stdout: the float32 logits of the trained model for that one sequence,
//       the ground truth a re-implementation of the model is checked against;
//   onset-train generate --config CELL.json --checkpoint FILE|DIR --tokens 1,2,3 --steps N
//       prints {"checkpoint", "tokens", "generated": [N ids]}: greedy decoding with the
//       evaluator's own decoder;
//   onset-train niah-prompts --config CELL.json --out FILE.jsonl [--checkpoint FILE|DIR]
//       writes the cell's headline NIAH prompts as JSON lines (niah_prompts.h); with a
//       checkpoint also what onset decodes for each, and prints {"checkpoint", "prompts",
//       "max_length", "metrics": {niah/acc...}} (without one: {"prompts", "max_length"}), where
//       max_length is the longest prompt plus the answer's data.value_len tokens.
// A directory stands for its newest valid checkpoint. Exit codes are base/trainer_contract.h's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onset::model {

struct ExportFlags {
  std::string command;          // "export", "dump-logits", "generate" or "niah-prompts"
  std::string config_path;      // required
  std::string checkpoint;       // a ckpt-*.pt file or a checkpoint directory; required but by
                                // niah-prompts
  std::string out_dir;          // export: required (niah-prompts: the file to write)
  std::string dtype = "f32";    // export: f32 or bf16
  std::vector<int64_t> tokens;  // dump-logits, generate: required, each in [0, vocab)
  int steps = 0;                // generate: tokens to decode, required
  std::optional<int> threads;   // intra-op CPU threads; default 1 (reproducible sums)
  bool help = false;
};

inline constexpr const char* kExportUsage =
    "usage: onset-train export --config FILE.json --checkpoint FILE|DIR --out DIR "
    "[--dtype f32|bf16]\n"
    "       onset-train dump-logits --config FILE.json --checkpoint FILE|DIR --tokens 1,2,3 "
    "[--threads N]\n"
    "       onset-train generate --config FILE.json --checkpoint FILE|DIR --tokens 1,2,3 "
    "--steps N [--threads N]\n"
    "       onset-train niah-prompts --config FILE.json --out FILE.jsonl [--checkpoint FILE|DIR] "
    "[--threads N]";

// Whether argv[1] names one of these subcommands.
bool IsExportCommand(int argc, const char* const* argv);

// Parses argv[1] (the subcommand) and its flags ("--flag value" or "--flag=value"). Returns an
// error message naming the flag.
std::optional<std::string> ParseExportFlags(int argc, const char* const* argv, ExportFlags* out);

int ExportMain(int argc, char** argv);

}  // namespace onset::model
