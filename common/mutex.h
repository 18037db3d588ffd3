// A mutex the compiler can check: std::mutex with clang's thread-safety attributes (absl's
// spelling), which libstdc++'s own lacks. Members a mutex guards say so with ABSL_GUARDED_BY(mu_)
// and functions that need it held with ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_); clang with
// -Wthread-safety (scripts/check-thread-safety, run by CI) then refuses an access without it.
// GCC ignores the attributes. Header-only, the standard library only.
#pragma once

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace onset::common {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // BasicLockable, so that std::condition_variable_any can wait on it.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace onset::common
