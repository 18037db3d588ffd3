#include "common/admission.h"

namespace onset::common {

Admission::Ticket::~Ticket() {
  if (admission_ != nullptr) admission_->Leave();
}

Admission::Ticket& Admission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (admission_ != nullptr) admission_->Leave();
    admission_ = other.admission_;
    other.admission_ = nullptr;
  }
  return *this;
}

std::optional<Admission::Ticket> Admission::Enter(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  MutexLock lock(&mu_);
  while (taken_ >= places_) {
    if (freed_.wait_until(mu_, deadline) == std::cv_status::timeout && taken_ >= places_) {
      return std::nullopt;
    }
  }
  ++taken_;
  return Ticket(this);
}

int Admission::taken() const {
  MutexLock lock(&mu_);
  return taken_;
}

void Admission::Leave() {
  MutexLock lock(&mu_);
  --taken_;
  freed_.notify_one();
}

}  // namespace onset::common
