// The trainer's metrics protocol: one JSON object per line, written with a single write(2) per
// line so a reader on a pipe never sees a partial line from us, and nothing is buffered:
//
//   {"event":"train","tokens":8192,"step":1,"metrics":{"train/loss":5.61,...}}
//
// Every line has "event" (string), "tokens" (integer, tokens seen) and "metrics" (object of
// name -> number; a NaN or infinite value is written as null). "step" appears on train events.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onset::model {

struct MetricsEvent {
  std::string event;  // start | resume | train | eval | checkpoint | diverged | done
  int64_t tokens = 0;
  std::optional<int64_t> step;
  std::map<std::string, double> metrics;   // sorted by name

  std::string ToJsonLine() const;          // without the trailing newline
  // The inverse of ToJsonLine (null metric values read back as NaN); nullopt for a line that
  // is not one.
  static std::optional<MetricsEvent> FromJsonLine(const std::string& line);
};

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
