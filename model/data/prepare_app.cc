#include "model/data/prepare_app.h"

#include <cstdint>
#include <cstdio>
#include <exception>

#include "base/durable_file.h"
#include "base/trainer_contract.h"
#include "base/flag_arg.h"

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
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      flags.help = true;
      continue;
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (arg == "--") {
        for (++i; i < argc; ++i) flags.inputs.push_back(argv[i]);
        break;
      }
      flags.inputs.push_back(arg);
      continue;
    }
    auto [name, value, has_value] = base::SplitFlag(arg);
    if (name != "--out" && name != "--dtype") return "prepare: unknown argument '" + arg + "'";
    if (!has_value) {
      if (i + 1 >= argc) return name + ": missing value";
      value = argv[++i];
    }
    if (value.empty()) return name + ": must not be empty";
    if (name == "--out") {
      flags.out = value;
    } else if (value == "uint16" || value == "uint32") {
      flags.dtype = value;
    } else {
      return "--dtype: must be uint16 or uint32, got '" + value + "'";
    }
  }
  if (!flags.help) {
    if (flags.out.empty()) return "--out is required";
    if (flags.inputs.empty()) return "prepare: name at least one text file";
  }
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
  if (auto error = ParsePrepareFlags(argc, argv, &flags)) {
    std::fprintf(stderr, "onset-train: %s\n%s\n", error->c_str(), kPrepareUsage);
    return trainer::kExitUsage;
  }
  if (flags.help) {
    std::fprintf(stdout, "%s\n", kPrepareUsage);
    return trainer::kExitOk;
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
