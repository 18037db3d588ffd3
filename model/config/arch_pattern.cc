#include "model/config/arch_pattern.h"

#include <regex>
#include <vector>

namespace onset::model {
namespace {

// The ratio archs: name -> the efficient layer they repeat.
struct RatioArch {
  const char* name;
  char letter;
};
constexpr RatioArch kRatioArchs[] = {
    {"swa", kSlidingWindow}, {"lightning", kLinearAttention}, {"gdn", kGatedDeltaNet}};

// Parses "name" or "name:R" of a ratio arch into its letter and ratio; false when `arch` is not
// a ratio arch. `error` is set when it is one but R is malformed.
bool ParseRatioArch(const std::string& arch, char* letter, int* ratio,
                    std::optional<std::string>* error) {
  for (const RatioArch& r : kRatioArchs) {
    const std::string name = r.name;
    if (arch != name && arch.rfind(name + ":", 0) != 0) continue;
    *letter = r.letter;
    *ratio = 3;
    if (arch.size() > name.size()) {
      const std::string digits = arch.substr(name.size() + 1);
      if (digits.empty() || digits.size() > 3 ||
          digits.find_first_not_of("0123456789") != std::string::npos) {
        *error = "ratio in '" + arch + "' must be a non-negative integer, e.g. " + name + ":3 (" +
                 name + ":0 = no full-attention layer)";
        return true;
      }
      *ratio = std::stoi(digits);
    }
    return true;
  }
  return false;
}

bool IsLayerLetter(char c) {
  return c == kFullAttention || c == kSlidingWindow || c == kLinearAttention || c == kGatedDeltaNet;
}

// Which layers of `pattern` take RoPE under `pos`.
std::vector<bool> RopeLayers(const std::string& pattern, const std::string& pos) {
  std::vector<bool> flags;
  for (char kind : pattern) flags.push_back(KindUsesRope(kind, pos));
  return flags;
}

}  // namespace

bool ArchUsesFullPosition(const std::string& arch) {
  char letter = 0;
  int ratio = 0;
  std::optional<std::string> error;
  return ParseRatioArch(arch, &letter, &ratio, &error) && !error && ratio >= 1;
}

std::optional<std::string> ResolvePattern(const std::string& arch, int layers, std::string* pattern,
                                          const std::string& full_position) {
  if (full_position != kFullLast && full_position != kFullFirst) {
    return "unknown full_position '" + full_position + "': expected last or first";
  }
  std::string unit;
  char letter = 0;
  int ratio = 0;
  std::optional<std::string> ratio_error;
  if (arch == "full") {
    unit = "F";
  } else if (ParseRatioArch(arch, &letter, &ratio, &ratio_error)) {
    if (ratio_error) return ratio_error;
    unit = std::string(ratio, letter);
    if (ratio == 0) {
      unit = std::string(1, letter);
    } else if (full_position == kFullFirst) {
      unit.insert(unit.begin(), kFullAttention);
    } else {
      unit += kFullAttention;
    }
  } else {
    if (arch.empty()) return std::string("arch must not be empty");
    for (char c : arch) {
      if (!IsLayerLetter(c)) {
        return "unknown arch '" + arch +
               "': expected full, swa[:R], lightning[:R], gdn[:R] or a pattern of F/S/L/D "
               "letters such as SSSF";
      }
    }
    unit = arch;
  }
  if (layers % static_cast<int>(unit.size()) != 0) {
    return "arch '" + arch + "' repeats a group of " + std::to_string(unit.size()) +
           " layers, which does not divide model.layers = " + std::to_string(layers);
  }
  pattern->clear();
  for (int i = 0; i < layers / static_cast<int>(unit.size()); ++i) *pattern += unit;
  return std::nullopt;
}

bool IsExplicitPos(const std::string& pos) {
  static const std::regex kExplicit("([FS]:(rope|nope))(,[FS]:(rope|nope))?");
  return std::regex_match(pos, kExplicit) && !(pos.size() > 6 && pos[0] == pos[7]);
}

bool IsKnownPos(const std::string& pos) {
  return pos == kPosRope || pos == kPosNopeFull || pos == kPosNope || IsExplicitPos(pos);
}

bool KindUsesRope(char kind, const std::string& pos) {
  if (kind != kFullAttention && kind != kSlidingWindow) return false;
  if (pos == kPosNope) return false;
  if (pos == kPosNopeFull) return kind != kFullAttention;
  if (pos == kPosRope) return true;
  // Explicit "F:nope,S:rope": find this layer's type.
  const std::string entry = std::string(1, kind) + ":";
  const size_t at = pos.find(entry);
  return at == std::string::npos || pos.compare(at + 2, 4, "nope") != 0;
}

bool KindUsesLogn(char kind, const std::string& pos, const std::string& logn_scaling) {
  if (logn_scaling == kLognOff || KindUsesRope(kind, pos)) return false;
  if (kind == kFullAttention) return true;
  return kind == kSlidingWindow && logn_scaling == kLognAll;
}

std::string CanonicalPos(const std::string& pattern, const std::string& pos) {
  const std::vector<bool> wanted = RopeLayers(pattern, pos);
  for (const char* name : {kPosRope, kPosNope, kPosNopeFull, "F:rope,S:nope"}) {
    if (RopeLayers(pattern, name) == wanted) return name;
  }
  return pos;
}

std::string CanonicalLognScaling(const std::string& pattern, const std::string& pos,
                                 const std::string& logn_scaling) {
  bool any = false;
  bool any_sliding = false;
  for (char kind : pattern) {
    const bool uses = KindUsesLogn(kind, pos, logn_scaling);
    any |= uses;
    any_sliding |= uses && kind == kSlidingWindow;
  }
  if (!any) return kLognOff;
  if (!any_sliding) return kLognFull;
  return logn_scaling;
}

}  // namespace onset::model
