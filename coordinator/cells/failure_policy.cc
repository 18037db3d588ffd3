#include "coordinator/cells/failure_policy.h"

#include <signal.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include "base/trainer_contract.h"

namespace onset::coordinator {
namespace {

bool MentionsOutOfMemory(const std::string& text) {
  std::string lower(text.size(), ' ');
  std::transform(text.begin(), text.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::array<const char*, 5> kMarks = {
      "out of memory", "std::bad_alloc", "cuda error: out of memory", "cannot allocate memory",
      "outofmemoryerror"};
  for (const char* mark : kMarks) {
    if (lower.find(mark) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

const char* FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kNone:
      return "";
    case FailureClass::kCrash:
      return "crash";
    case FailureClass::kLost:
      return "lost";
    case FailureClass::kOom:
      return "oom";
    case FailureClass::kConfig:
      return "config";
    case FailureClass::kUnconfirmed:
      return "unconfirmed";
  }
  return "";
}

FailureClass FailureClassFromName(const std::string& name) {
  for (FailureClass c : {FailureClass::kCrash, FailureClass::kLost, FailureClass::kOom,
                         FailureClass::kConfig, FailureClass::kUnconfirmed}) {
    if (name == FailureClassName(c)) return c;
  }
  return FailureClass::kNone;
}

FailureClass ClassifyFailure(std::optional<int> exit_code, int signal,
                             const std::string& stderr_tail) {
  if (MentionsOutOfMemory(stderr_tail)) return FailureClass::kOom;
  // The kernel's OOM killer sends SIGKILL; so does a person. Without a word on stderr a SIGKILL
  // is a crash (retried): wrongly calling it OOM would stop the retries for good.
  if (signal == 0 && exit_code == trainer::kExitUsage) return FailureClass::kConfig;
  return FailureClass::kCrash;
}

bool RetryPolicy::Retries(FailureClass c, int failures) const {
  if (c == FailureClass::kUnconfirmed) return true;
  if (c != FailureClass::kCrash && c != FailureClass::kLost) return false;
  return failures < max_failures;
}

std::chrono::milliseconds RetryPolicy::Backoff(int failures) const {
  std::chrono::milliseconds wait = base_backoff;
  for (int i = 1; i < failures && wait < max_backoff; ++i) wait *= 2;
  return std::min(wait, max_backoff);
}

std::string DescribeFailure(FailureClass c, std::optional<int> exit_code, int signal,
                            const std::string& reason) {
  std::string what = reason;
  if (what.empty() && signal != 0) {
    const char* name = sigabbrev_np(signal);
    what =
        name ? "killed by SIG" + std::string(name) : "killed by signal " + std::to_string(signal);
  } else if (what.empty() && exit_code) {
    what = "exit code " + std::to_string(*exit_code);
  }
  const char* prefix = c == FailureClass::kOom      ? "out of memory"
                       : c == FailureClass::kConfig ? "config or data refused by the trainer"
                                                    : "";
  if (*prefix == 0) return what;
  return what.empty() ? prefix : std::string(prefix) + ": " + what;
}

}  // namespace onset::coordinator
