// The names of onset-train's checkpoint files and of the directories attempts write them into,
// shared by the trainer (which writes and lists them), the worker (which makes the directories)
// and the coordinator (which names the checkpoints an attempt may start from).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onset::base {

// "ckpt-000000524288.pt": the tokens trained on, zero-padded so that names sort by tokens.
std::string CheckpointFileName(int64_t tokens);
// The tokens of a checkpoint file's name (the last part of `path`): CheckpointFileName's
// inverse, nullopt for any other name.
std::optional<int64_t> CheckpointTokens(std::string_view path);

// "attempt-3": the directory of attempt 3 of a cell, under the cell's directory (the
// coordinator's ROOT/STUDY/CELL, or a worker's WORK/CELL). An attempt writes its checkpoints into
// its own directory and no other attempt ever writes there.
std::string AttemptDirName(int attempt);

}  // namespace onset::base
