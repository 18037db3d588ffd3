#include "model/data/prepare_app.h"

#include <cstdint>
#include <cstdio>
#include <exception>

#include "base/durable_file.h"
#include "base/trainer_contract.h"
#include "model/command_flags.h"

namespace onset::model {
namespace {

constexpr const char* kPrepare = "prepare";

// Appends `value` as a little-endian integer of `width` bytes.
void AppendToken(uint32_t value, int width, std::string* out) {
  for (int b = 0; b < width; ++b) out->push_back(static_cast<char>((value >> (8 * b)) & 0xff));
}

}  // namespace

bool IsPrepareCommand(int argc, const char* const* argv) {
  return argc >= 2 && std::string(argv[1]) == kPrepare;
}

std::optional<std::string> ParsePrepareFlags(int argc, const char* const* argv, PrepareFlags* out) {
  PrepareFlags flags;
  CLI::App app{"", kPrepare};
  app.add_option("--out", flags.out)->required()->check(NotEmpty("must not be empty"));
  app.add_option("--dtype", flags.dtype)->check(OneOf({"uint16", "uint32"}));
  // The text files, anywhere among the flags; after "--", names that start with "-" too.
  app.add_option("text", flags.inputs);
  // The subcommand stands where a program's name would.
  if (auto error = ParseFlags(app, argc - 1, argv + 1, &flags.help)) return error;
  if (!flags.help && flags.inputs.empty()) return "prepare: name at least one text file";
  *out = std::move(flags);
  return std::nullopt;
}

std::optional<std::string> PrepareTokenFile(const PrepareFlags& flags, int64_t* tokens) {
  const int width = flags.dtype == "uint32" ? 4 : 2;
  std::string bytes;
  bool ends_with_newline = true;
  for (const std::string& input : flags.inputs) {
    std::string text;
    if (auto error = base::ReadFile(input, &text)) return error;
    if (text.empty()) continue;
    if (!ends_with_newline) AppendToken('\n', width, &bytes);
    bytes.reserve(bytes.size() + text.size() * width);
    for (unsigned char c : text) AppendToken(c, width, &bytes);
    ends_with_newline = text.back() == '\n';
  }
  if (bytes.empty()) return "prepare: the input files hold no text: nothing to write";
  try {
    base::WriteFileDurably(flags.out, bytes);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  *tokens = static_cast<int64_t>(bytes.size() / width);
  return std::nullopt;
}

int PrepareMain(int argc, char** argv) {
  PrepareFlags flags;
  if (auto exit = ExitBeforeRunning(ParsePrepareFlags(argc, argv, &flags), flags, kPrepareUsage)) {
    return *exit;
  }
  int64_t tokens = 0;
  if (auto error = PrepareTokenFile(flags, &tokens)) {
    std::fprintf(stderr, "onset-train prepare: %s\n", error->c_str());
    return trainer::kExitRuntimeError;
  }
  std::fprintf(stdout,
               "%s: %lld tokens (%s, byte vocabulary) from %zu file(s)\n"
               "use it with   data: {background: file, path: %s, dtype: %s, vocab_size: 256}\n",
               flags.out.c_str(), static_cast<long long>(tokens), flags.dtype.c_str(),
               flags.inputs.size(), flags.out.c_str(), flags.dtype.c_str());
  return trainer::kExitOk;
}

}  // namespace onset::model
