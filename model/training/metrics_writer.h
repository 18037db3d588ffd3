// Where the trainer's metrics go. The line itself, its events and its null rule are the
// contract in base/metrics_line.h; JsonLinesSink writes it with a single write(2) per line, so a
// reader on a pipe never sees a partial line from us, and nothing is buffered.
#pragma once

#include <vector>

#include "base/metrics_line.h"

namespace onset::model {

using MetricsEvent = trainer::MetricsEvent;

// Where events go. Implementations need not be thread-safe: the trainer emits from one thread.
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void Emit(const MetricsEvent& event) = 0;
};

// Writes JSON lines to a file descriptor it does not own (1 = stdout). A failed write (e.g. a
// closed pipe) throws std::runtime_error: a trainer nobody listens to should stop.
class JsonLinesSink : public MetricsSink {
 public:
  explicit JsonLinesSink(int fd) : fd_(fd) {}
  void Emit(const MetricsEvent& event) override;

 private:
  int fd_;
};

// Drops every event (the ranks of a data-parallel run other than rank 0).
class NullSink : public MetricsSink {
 public:
  void Emit(const MetricsEvent&) override {}
};

// Keeps events in memory (tests).
class MemorySink : public MetricsSink {
 public:
  void Emit(const MetricsEvent& event) override { events.push_back(event); }
  std::vector<MetricsEvent> events;
};

}  // namespace onset::model
