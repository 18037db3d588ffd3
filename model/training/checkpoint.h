// onset-train's checkpoint files: the whole training state of one cell at a step boundary, so
// that a resumed run continues exactly as if it had never stopped.
//
// A file `ckpt-<tokens, 12 digits>.pt` is a LibTorch archive (zip) followed by a 24-byte
// footer:
//
//   [archive bytes][magic "onsetckp" (8)][archive size, u64 LE][CRC-32 of archive, u32 LE]
//   [format version, u32 LE]
//
// The archive holds "format_version", "config" (the cell's canonical JSON text), the
// TrainProgress scalars, "rng_cpu" (and "rng_cuda" when trained on CUDA) generator states, and
// two nested archives, "model" (parameters and buffers, Module::save) and "optimizer" (AdamW
// moments and step counts). Files are written to `<name>.tmp`, fsynced and renamed, so a crash
// leaves either the old set of files or the new one plus a stray .tmp; a file cut short or
// damaged anyway (copying, a full disk) fails the footer or CRC check.
//
// Plain POSIX file calls: libtorch.so exports its own copies of some std::filesystem symbols.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "model/config/cell_config.h"

namespace onset::model {

inline constexpr uint32_t kCheckpointFormatVersion = 1;

// Where the trainer is, beyond the model, optimizer and RNG states.
struct TrainProgress {
  int64_t tokens = 0;         // tokens trained on (the schedule position)
  int64_t steps = 0;          // optimizer steps taken
  int64_t data_position = 0;  // index of the next training sequence (SequenceStream)
  double train_seconds = 0;   // training time so far, evaluation and checkpoints excluded
  // The train-loss window: steps since the last train event.
  double window_loss_sum = 0;
  int64_t window_steps = 0;
  int64_t window_tokens = 0;
  double window_seconds = 0;
  // The train and eval events reported before this checkpoint, as JSON lines: a resumed run
  // sends them again, so whoever collects the metrics has them all even if the attempt that
  // first sent them died before they were delivered (re-sent points are idempotent upserts).
  std::string reported;
};

// "ckpt-000000524288.pt": zero-padded so that names sort by tokens.
std::string CheckpointFileName(int64_t tokens);

struct CheckpointFile {
  int64_t tokens = 0;
  std::string path;  // dir + "/" + name
};

// The checkpoint files in `dir` by name (temporary files excluded), oldest first. A missing
// directory has none.
std::vector<CheckpointFile> ListCheckpoints(const std::string& dir);

// Where the checkpoints of a cell lie under its directory `dir` (the coordinator's
// ROOT/STUDY/CELL or a worker's WORK/CELL), the latest attempt's first: each attempt-N
// (base::AttemptDirName) and its checkpoints/ subdirectory by N descending, then `dir` itself
// (where attempts wrote before each had a directory of its own). Directories that do not exist
// are left out.
std::vector<std::string> CheckpointDirsOfCell(const std::string& dir);

// Writes `dir`/CheckpointFileName(progress.tokens) atomically, creating `dir` if needed, and
// returns the file's size in bytes. Throws std::runtime_error naming the file on I/O errors.
int64_t SaveCheckpoint(const std::string& dir, const CellConfig& config,
                       const TrainProgress& progress, const torch::nn::Module& model,
                       const torch::optim::Optimizer& optimizer, const at::Device& device);

struct CheckpointError {
  enum class Kind {
    kCorrupt,      // unreadable, truncated or failing its checksum: skip it
    kOtherConfig,  // intact, but written for a config that trains differently: refuse
    kUnfit,        // intact and of the config, but its progress is not a start the run can use
  };
  Kind kind;
  std::string message;  // starts with the file's path
};

// Which configs a checkpoint may continue:
//   kTrajectory:  the cell's own, give or take the checkpoint cadence and retention fields (a
//                 cell resuming itself).
//   kStablePhase: any whose stable phase (StablePhaseJson, model/config/wsd_trunk.h) is the
//                 file's (a WSD trunk resuming itself after its spec grew, or a branch starting
//                 from its trunk's checkpoint).
enum class ConfigMatch { kTrajectory, kStablePhase };

// Whether a run can start from an intact checkpoint of its config, given the progress it holds
// (which it may adjust): an error message refuses it.
using ProgressCheck = std::function<std::optional<std::string>(TrainProgress*)>;

// Verifies the file, checks that it was written for `config` (as `match` says) and that `check`
// (when given) accepts its progress (else kUnfit, with check's message), and then restores
// `model`, `optimizer`, the RNG states and `progress`. The model and optimizer are untouched
// when an error is returned. Throws (c10::Error) only when an intact file of the right config
// does not fit the model, which means a bug or an incompatible build.
std::optional<CheckpointError> LoadCheckpoint(const std::string& path, const CellConfig& config,
                                              const at::Device& device, TrainProgress* progress,
                                              torch::nn::Module* model,
                                              torch::optim::Optimizer* optimizer,
                                              ConfigMatch match = ConfigMatch::kTrajectory,
                                              const ProgressCheck& check = nullptr);

// The size in bytes of `dir`/CheckpointFileName(tokens), or nullopt when there is no such file
// (its contents are not checked).
std::optional<int64_t> CheckpointFileBytes(const std::string& dir, int64_t tokens);

// Makes `from_dir`'s checkpoint at `tokens` one of `to_dir` too: a hard link (the file is never
// written again; no copy), or where links fail (another file system) a copy written to a
// temporary file and renamed. False, with a message on stderr, when neither works.
bool LinkCheckpoint(const std::string& from_dir, const std::string& to_dir, int64_t tokens);

// Restores only the model's parameters and buffers (no optimizer, RNG or progress), for export
// and inspection, and sets *config_text to the canonical config text the file was written with.
// The caller decides whether that config matches its model. Errors are kCorrupt; the model is
// untouched then. Throws (c10::Error) when an intact file does not fit `model`.
std::optional<CheckpointError> LoadCheckpointWeights(const std::string& path,
                                                     const at::Device& device,
                                                     torch::nn::Module* model,
                                                     std::string* config_text);

// Deletes every checkpoint in `dir` except the newest `keep_last`, those whose tokens are in
// `keep_tokens` and those at `keep_from` tokens or more, and the temporary files of writes that
// never finished: those not modified for kStaleCheckpointTempAge, so that a file another trainer
// is writing right now is never pulled from under it. Returns the paths it deleted.
inline constexpr int64_t kStaleCheckpointTempAgeSeconds = 3600;
std::vector<std::string> PruneCheckpoints(const std::string& dir, int keep_last,
                                          const std::set<int64_t>& keep_tokens,
                                          int64_t keep_from = std::numeric_limits<int64_t>::max());

}  // namespace onset::model
