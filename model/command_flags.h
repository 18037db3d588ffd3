// What onset-train's commands (train, export, dump-logits, prepare) share in parsing their flags
// with CLI11: checks whose messages name the flag, what it must be and what it got
// ("--threads: must be an integer between 1 and 1024, got '0'"), and one way to run a parse.
// Header-only; CLI11 is header-only too (vendored in third_party/ for a node with only LibTorch).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/trainer_contract.h"

namespace onset::model {

// A whole number in decimal digits (at most 9) within lo..hi, or nullopt.
inline std::optional<int> ParseWholeNumber(const std::string& text, int lo, int hi) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const int v = std::stoi(text);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// A value ParseWholeNumber accepts: "must be <what>, got '...'" otherwise. Given to
// Option::transform, it rewrites the number without leading zeros, which CLI11's conversion to
// an integer would read as octal.
inline CLI::Validator WholeNumber(int lo, int hi, const std::string& what) {
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        const std::optional<int> n = ParseWholeNumber(value, lo, hi);
        if (!n) return "must be " + what + ", got '" + value + "'";
        value = std::to_string(*n);
        return "";
      },
      "");
}

// One of `names`: "must be a, b or c, got '...'" otherwise.
inline CLI::Validator OneOf(std::vector<std::string> names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return CLI::Validator(
      [names = std::move(names), list](std::string& value) -> std::string {
        for (const std::string& n : names) {
          if (value == n) return "";
        }
        return "must be " + list + ", got '" + value + "'";
      },
      "");
}

// Not empty: `message` ("must name a file") otherwise.
inline CLI::Validator NotEmpty(const std::string& message) {
  return CLI::Validator(
      [=](std::string& value) -> std::string { return value.empty() ? message : ""; }, "");
}

// Parses argv[1..] into `app`'s options ("--flag value" or "--flag=value"; of a flag given twice,
// the last wins). Returns nullopt, with *help set when -h or --help was given (then required
// flags may be missing), or the error: "--flag: problem", "The following argument was not
// expected: --bogus", "--flag is required". Options marked required() are checked after the
// unknown arguments, so that a misspelt flag is named rather than the one it was meant to be.
// The usage text is the caller's own.
inline std::optional<std::string> ParseFlags(CLI::App& app, int argc, const char* const* argv,
                                             bool* help) {
  std::vector<const CLI::Option*> required;
  for (CLI::Option* option : app.get_options()) {
    if (option->get_items_expected_max() <= 1) {
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    if (option->get_required()) {
      required.push_back(option);
      option->required(false);
    }
  }
  *help = false;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    *help = true;
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    return std::string(e.what());
  }
  for (const CLI::Option* option : required) {
    if (option->count() == 0) return option->get_name() + " is required";
  }
  return std::nullopt;
}

// What a command of onset-train does before it runs, from how its flags parsed: bad flags print
// the error and the usage on stderr and exit 2 (trainer::kExitUsage), `flags.help` prints the
// usage on stdout and exits 0; nullopt means run. `flags` is taken by reference so that its help
// is read after the parse in the same call has filled it:
//   if (auto exit = ExitBeforeRunning(ParseTrainFlags(argc, argv, &flags), flags, kTrainUsage))
//     return *exit;
template <typename Flags>
std::optional<int> ExitBeforeRunning(const std::optional<std::string>& parse_error,
                                     const Flags& flags, const char* usage) {
  if (parse_error) {
    std::fprintf(stderr, "onset-train: %s\n%s\n", parse_error->c_str(), usage);
    return trainer::kExitUsage;
  }
  if (flags.help) {
    std::fprintf(stdout, "%s\n", usage);
    return trainer::kExitOk;
  }
  return std::nullopt;
}

}  // namespace onset::model
