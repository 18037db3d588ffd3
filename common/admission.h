// At most so many of one kind of work at once: the rest wait, for a while, for a place. What a
// shared daemon uses to bound the memory and time that expensive calls (a study's submission or
// dry run, which hold every cell of the study) take together, whatever the number of clients.
#pragma once

#include <chrono>
#include <condition_variable>
#include <optional>

#include "common/mutex.h"

namespace onset::common {

// Thread-safe.
class Admission {
 public:
  // A place, held until destroyed. Move-only.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept : admission_(other.admission_) { other.admission_ = nullptr; }
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();

   private:
    friend class Admission;
    explicit Ticket(Admission* admission) : admission_(admission) {}
    Admission* admission_;
  };

  explicit Admission(int places) : places_(places) {}

  // A place now or once one frees within `wait`; nullopt otherwise.
  std::optional<Ticket> Enter(std::chrono::milliseconds wait) ABSL_LOCKS_EXCLUDED(mu_);

  int places() const { return places_; }
  int taken() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Leave() ABSL_LOCKS_EXCLUDED(mu_);

  const int places_;
  mutable Mutex mu_;
  std::condition_variable_any freed_;
  int taken_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace onset::common
