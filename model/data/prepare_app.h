// `onset-train prepare`: turns text files into a token file the trainer reads with
// data.background: file (token_file.h), in the byte vocabulary: every byte of the text is one
// token (id 0..255), so the cells that train on it use data.vocab_size: 256.
//
//   onset-train prepare --out FILE.bin [--dtype uint16|uint32] TEXT [TEXT...]
//
// The files are concatenated in the order given, with a newline between two files when the
// first does not end with one. The output is written atomically (durable_file.h); it is
// assembled in memory, so inputs should fit in RAM twice over. Torch-free. Exit codes are
// base/trainer_contract.h's.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace onset::model {

struct PrepareFlags {
  std::string out;                  // required
  std::string dtype = "uint16";     // uint16 or uint32
  std::vector<std::string> inputs;  // at least one
  bool help = false;
};

inline constexpr const char* kPrepareUsage =
    "usage: onset-train prepare --out FILE.bin [--dtype uint16|uint32] TEXT [TEXT...]";

bool IsPrepareCommand(int argc, const char* const* argv);

// Parses the flags after "prepare". Returns an error message naming the flag.
std::optional<std::string> ParsePrepareFlags(int argc, const char* const* argv, PrepareFlags* out);

// Reads the inputs and writes the token file. Returns an error "PATH: problem"; on success
// *tokens holds the number of tokens written.
std::optional<std::string> PrepareTokenFile(const PrepareFlags& flags, int64_t* tokens);

int PrepareMain(int argc, char** argv);

}  // namespace onset::model
