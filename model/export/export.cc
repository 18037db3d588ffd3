#include "model/export/export.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/cell_id.h"
#include "base/durable_file.h"
#include "model/training/checkpoint.h"

namespace onset::model {

std::optional<std::string> ResolveCheckpoint(const std::string& file_or_dir, std::string* path) {
  struct stat st;
  if (::stat(file_or_dir.c_str(), &st) != 0) {
    return file_or_dir + ": cannot open: " + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    *path = file_or_dir;
    return std::nullopt;
  }
  // A cell's directory holds a directory per attempt: the newest valid checkpoint of the latest
  // attempt that wrote one is the cell's.
  std::string skipped;
  for (const std::string& dir : CheckpointDirsOfCell(file_or_dir)) {
    std::vector<CheckpointFile> files = ListCheckpoints(dir);
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
      // Only the integrity checks: a model-free read of the footer and checksum.
      torch::nn::Module probe;
      std::string config_text;
      auto error = LoadCheckpointWeights(it->path, at::kCPU, &probe, &config_text);
      if (!error) {
        *path = it->path;
        return std::nullopt;
      }
      skipped += "; " + error->message;
    }
  }
  return file_or_dir + ": no valid checkpoint (ckpt-*.pt)" + skipped;
}

std::optional<std::string> LoadTrainedModel(const CellConfig& config, const std::string& checkpoint,
                                            Transformer* model, std::string* checkpoint_path) {
  std::string path;
  if (auto error = ResolveCheckpoint(checkpoint, &path)) return error;
  Transformer m(config.model);
  std::string config_text;
  if (auto error = LoadCheckpointWeights(path, at::kCPU, m.ptr().get(), &config_text)) {
    return error->message;
  }
  const nlohmann::json stored =
      nlohmann::json::parse(config_text, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json want = config.ToJson();
  if (!stored.is_object() || stored.value("model", nlohmann::json()) != want["model"]) {
    std::string where;
    if (stored.is_object() && stored.contains("model")) {
      const nlohmann::json patch = nlohmann::json::diff(stored["model"], want["model"]);
      if (!patch.empty()) where = " (model" + patch[0].value("path", "") + ")";
    }
    return path + ": written for a different model than the config describes" + where +
           "; pass the config the checkpoint was trained with";
  }
  m->eval();
  *model = m;
  *checkpoint_path = path;
  return std::nullopt;
}

SafetensorsContents ExportContents(Transformer& model, const CellConfig& config,
                                   at::ScalarType dtype, const std::string& checkpoint) {
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kBFloat16,
              "export dtype must be float32 or bfloat16");
  SafetensorsContents contents;
  for (const auto& p : model->named_parameters()) {
    contents.tensors.push_back({p.key(), p.value().detach().to(at::kCPU, dtype)});
  }
  for (const auto& b : model->named_buffers()) {
    contents.tensors.push_back({b.key(), b.value().detach().to(at::kCPU)});
  }
  const std::string canonical = config.CanonicalText();
  contents.metadata = {
      {"format", "pt"},
      {"format_version", std::to_string(kExportFormatVersion)},
      {"producer", "onset-train export"},
      {"config", canonical},
      {"cell_id", base::CellIdOf(canonical)},
      {"checkpoint", checkpoint.substr(checkpoint.rfind('/') + 1)},
      {"dtype", dtype == at::kFloat ? "F32" : "BF16"},
  };
  return contents;
}

void WriteExport(const std::string& out_dir, const SafetensorsContents& contents,
                 const CellConfig& config) {
  base::MakeDirs(out_dir);
  WriteSafetensors(out_dir + "/model.safetensors", contents);
  base::WriteFileDurably(out_dir + "/config.json", config.ToJson().dump(2) + "\n");
}

}  // namespace onset::model
