#include "model/training/metrics_writer.h"

#include <cstring>
#include <stdexcept>

#include "base/posix_io.h"

namespace onset::model {

void JsonLinesSink::Emit(const MetricsEvent& event) {
  if (int err = base::WriteAll(fd_, event.Format() + "\n"); err != 0) {
    throw std::runtime_error("writing metrics to fd " + std::to_string(fd_) + ": " +
                             std::strerror(err));
  }
}

}  // namespace onset::model
