// Exporting a trained model for use outside onset: the weights of one checkpoint as
// `model.safetensors` plus the cell's canonical `config.json` (docs/export.md describes the
// tensor names, shapes and the forward pass they define; tools/onset_reference.py implements
// it in plain PyTorch).
#pragma once

#include <optional>
#include <string>

#include <ATen/ATen.h>

#include "model/config/cell_config.h"
#include "model/export/safetensors_writer.h"
#include "model/nn/transformer.h"

namespace onset::model {

// Bumped whenever a tensor name, shape or meaning changes; stored as __metadata__.format_version.
inline constexpr int kExportFormatVersion = 1;

// A checkpoint file, or a directory: its newest checkpoint that passes the integrity checks; a
// cell's directory (ROOT/STUDY/CELL, or WORK/CELL) is searched attempt by attempt, the latest
// first (CheckpointDirsOfCell). Returns an error when the path is missing or a directory holds no
// valid checkpoint.
std::optional<std::string> ResolveCheckpoint(const std::string& file_or_dir, std::string* path);

// Builds the model of `config` on the CPU and restores its weights from `checkpoint` (a file
// or a directory, as above). Refuses a checkpoint whose model section differs from config's:
// its tensors would not mean what the config says. Errors start with the offending path.
std::optional<std::string> LoadTrainedModel(const CellConfig& config, const std::string& checkpoint,
                                            Transformer* model, std::string* checkpoint_path);

// Every parameter and buffer of `model` under its module path (e.g. "h0.mixer.qkv.weight"),
// converted to `dtype` (float32 or bfloat16), plus the metadata: format_version, the canonical
// config text, the cell id (first 16 hex digits of its SHA-256, as the coordinator names
// cells) and `checkpoint` (the file name the weights came from).
SafetensorsContents ExportContents(Transformer& model, const CellConfig& config,
                                   at::ScalarType dtype, const std::string& checkpoint);

// Writes `out_dir`/model.safetensors and `out_dir`/config.json atomically, creating out_dir.
// Throws std::runtime_error naming the file on I/O errors.
void WriteExport(const std::string& out_dir, const SafetensorsContents& contents,
                 const CellConfig& config);

}  // namespace onset::model
