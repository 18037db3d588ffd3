// What happens to a cell when an attempt ends: the per-cause failure policy.
//
//   succeeded            the cell succeeded.
//   diverged             the loss was not finite: a scientific result, never retried.
//   handed back          the worker was asked to stop (SIGTERM, e.g. preemption) and the trainer
//                        checkpointed: queued again at once, not counted as a failure.
//   cancelled            by `onset cancel`: the cell stays cancelled.
//   failed, class crash  exit 1, a signal, any failure not oom or config: retried after a backoff
//                        (base * 2^(n-1), capped) until max_failures counted failures.
//   lost                 the worker stopped heartbeating (lease expired) or vanished in a
//                        coordinator restart: retried like a crash.
//   unconfirmed          the lease expired before its worker ever called for it (the reply to
//                        its claim never reached it): retried, never counted.
//   failed, class oom    the trainer's stderr says it ran out of memory (a bare SIGKILL, which the
//                        OOM killer sends, is a crash): failed at once, with "out of memory" in
//                        the reason; the same config would run out again.
//   failed, class config the trainer refused its config or data (exit 2, trainer::kExitUsage in
//                        base/trainer_contract.h): failed at once.
//
// Pure functions of their inputs (times are passed in), so the policy is tested apart from the
// store.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace onset::coordinator {

enum class FailureClass { kNone, kCrash, kLost, kOom, kConfig, kUnconfirmed };
// "", "crash", "lost", "oom", "config", "unconfirmed": the names stored in
// attempts.failure_class.
const char* FailureClassName(FailureClass c);
// The class a stored name names; kNone for "" and for a name this coordinator does not know.
FailureClass FailureClassFromName(const std::string& name);

// The class of a failed attempt from what the worker saw: exit code (or the signal that killed
// the trainer) and the tail of its stderr.
FailureClass ClassifyFailure(std::optional<int> exit_code, int signal,
                             const std::string& stderr_tail);

struct RetryPolicy {
  int max_failures = 3;  // counted failures before a cell stays failed
  std::chrono::milliseconds base_backoff{30'000};
  std::chrono::milliseconds max_backoff{30 * 60'000};

  // Whether a failure of class `c` is retried when the cell has `failures` counted failures,
  // this one included. kUnconfirmed always is (it is never counted).
  bool Retries(FailureClass c, int failures) const;
  // The wait before retry number `failures` (>= 1): base * 2^(failures - 1), at most max.
  std::chrono::milliseconds Backoff(int failures) const;
};

// A one-line reason for a failed attempt, e.g. "out of memory (killed by signal 9)".
std::string DescribeFailure(FailureClass c, std::optional<int> exit_code, int signal,
                            const std::string& reason);

}  // namespace onset::coordinator
