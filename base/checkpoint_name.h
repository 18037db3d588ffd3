// The name of onset-train's checkpoint files, shared by the trainer (which writes and lists them)
// and the coordinator (which names the trunk checkpoint a WSD branch starts from).
#pragma once

#include <cstdint>
#include <string>

namespace onset::base {

// "ckpt-000000524288.pt": the tokens trained on, zero-padded so that names sort by tokens.
std::string CheckpointFileName(int64_t tokens);

}  // namespace onset::base
