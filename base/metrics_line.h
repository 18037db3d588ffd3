// onset-train's metrics line: one JSON object per line, written by the trainer on its metrics
// descriptor (--metrics-fd, stdout by default) and read by the worker that runs it. Both sides
// use this one definition, so they cannot drift apart.
//
//   {"event":"train","tokens":8192,"step":1,"at_unix_ms":1796558400123,
//    "metrics":{"train/loss":5.61,"train/lr":0.001}}                      (one line)
//
// "event" (string, one of the names below), "tokens" (integer: tokens seen), "step" (integer,
// on train events only), "at_unix_ms" (integer: the wall-clock time the event was measured, in
// milliseconds since the Unix epoch; absent from lines of trainers before it was added, and
// kept as it was when a resumed run reports its earlier events again) and "metrics" (object of
// name -> number), in this order. Other keys are ignored, and so is an event name this reader
// does not know (a newer trainer's).
//
// The null rule: a metric whose value is not finite (NaN, +-inf; a diverged loss) is written as
// null, and null reads back as NaN. The worker sends it on, and the coordinator stores it as
// "not finite" (NULL) like every NaN; analysis ignores such points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace onset::trainer {

// The events onset-train reports, in the order a run reports them.
inline constexpr const char* kEventStart = "start";            // the model's size, at 0 tokens
inline constexpr const char* kEventResume = "resume";          // where a resumed run continues
inline constexpr const char* kEventTrain = "train";            // every train.log_every_steps
inline constexpr const char* kEventEval = "eval";              // held-out loss, NIAH, ...
inline constexpr const char* kEventCheckpoint = "checkpoint";  // a checkpoint was written
inline constexpr const char* kEventDiverged = "diverged";      // the loss was not finite
inline constexpr const char* kEventStopped = "stopped";        // stopped on request
inline constexpr const char* kEventDone = "done";              // the budget is trained
inline constexpr const char* kMetricsEvents[] = {kEventStart,   kEventResume,     kEventTrain,
                                                 kEventEval,    kEventCheckpoint, kEventDiverged,
                                                 kEventStopped, kEventDone};

// Why a line is not a metrics line.
struct MetricsLineError {
  std::string what;  // e.g. "not JSON: syntax error ...", "no \"tokens\" integer"
  // Set when the line is one but for its "tokens", an integer beyond int64 (2^63 .. 2^64-1):
  // that number, and how many metric values the line held. A reader that bounds tokens itself
  // can count those values as dropped points like those of any other out-of-range line.
  std::optional<uint64_t> tokens_beyond_int64;
  size_t values = 0;
};

struct MetricsEvent {
  std::string event;  // one of kMetricsEvents
  int64_t tokens = 0;
  std::optional<int64_t> step;
  std::map<std::string, double> metrics;             // sorted by name; NaN: not finite
  std::optional<int64_t> at_unix_ms = std::nullopt;  // when it was measured; nullopt: unsaid

  // The line, without a trailing newline.
  std::string Format() const;
  // The event a line holds (trailing whitespace allowed), or nullopt with *error (when given)
  // saying what is wrong. Non-finite metric values read back as NaN.
  static std::optional<MetricsEvent> Parse(std::string_view line,
                                           MetricsLineError* error = nullptr);
};

}  // namespace onset::trainer
