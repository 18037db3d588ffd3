#include "model/training/metrics_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace onset::model {

void JsonLinesSink::Emit(const MetricsEvent& event) {
  const std::string line = event.Format() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw std::runtime_error("writing metrics to fd " + std::to_string(fd_) + ": " +
                               std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace onset::model
