// `onset export-model STUDY CELL --out DIR [--format safetensors|hf] [--checkpoint FILE|DIR]
// [--dtype f32|bf16] [--lm-eval]`: a trained cell's model, in files other tools load.
//
// It asks the coordinator for the cell (DescribeCell: its config and the checkpoints its lineage
// recorded, under the coordinator's checkpoint root), then runs `onset-train export` on the
// newest of them (or on --checkpoint: a checkpoint file or directory, e.g. the worker's
// WORK/CELL when the coordinator keeps no checkpoints). `safetensors` is onset-train's export
// (model.safetensors and config.json, docs/export.md); `hf` turns that into a Hugging Face
// transformers directory with the onset Python package (`python -m onset.hf`, docs/python.md).
// --lm-eval (with hf, byte vocabulary only) adds DIR/lm_eval: the lm-evaluation-harness tasks of
// the cell's headline NIAH prompts (`onset-train niah-prompts` on the same checkpoint, so each
// prompt also records what onset decoded; `python -m onset.lm_eval_task`, docs/lm-eval.md), and
// prints the lm_eval command that runs them.
//
// Exit codes as every command: 0 written; 1 could not be (no checkpoint, a trainer or Python
// failure, the coordinator unreachable); 2 bad input.
#pragma once

#include <ostream>
#include <string>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"

namespace onset::cli {

struct ExportModelOptions {
  std::string study;
  std::string cell;                    // an id or a unique prefix
  std::string out;                     // the directory to write
  std::string format = "safetensors";  // or "hf"
  std::string checkpoint;              // a file or directory; empty: the newest the cell recorded
  std::string dtype = "f32";
  bool lm_eval = false;  // also the lm-evaluation-harness task (needs format hf)
  std::string trainer;   // onset-train; empty: the one next to onset
  std::string python;    // the Python with the onset package; empty: $ONSET_PYTHON, else the
                         // build's virtual environment
};

int ExportModelCommand(StudyClient& client, const ExportModelOptions& options, std::ostream& out,
                       std::ostream& err);

// Adds export-model to `app`.
void AddExportModelCommand(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
