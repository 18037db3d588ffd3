// One command-line argument split as "--name=value" (has_value) or a bare "--name" whose value,
// if it takes one, is the next argument.
#pragma once

#include <string>

namespace onset::base {

struct FlagArg {
  std::string name;
  std::string value;
  bool has_value = false;
};

inline FlagArg SplitFlag(const std::string& arg) {
  if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
    return {arg.substr(0, eq), arg.substr(eq + 1), true};
  }
  return {arg, "", false};
}

}  // namespace onset::base
