// What a metric point may be: the worker drops (and counts) points outside these bounds before
// it sends them, and the coordinator refuses them one by one before it stores them, so that one
// bad line of a trainer's output never costs the points around it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace onset::common {

// A metric name: 1 to 256 bytes of ASCII letters, digits and _ - . / @ : + = %
// (e.g. "train/loss", "niah/acc@512", "niah/acc_depth@0.5", "rh/score/l3h7").
inline constexpr size_t kMaxMetricNameBytes = 256;
// Token counts (of metric points and of heartbeats) lie in 0..1e15: beyond any real run, far
// from where int64 arithmetic wraps.
inline constexpr int64_t kMaxTokens = 1'000'000'000'000'000;

// A point's wall time (milliseconds since the Unix epoch) is believed from 2000-01-01 to the
// year 9999; outside, it is taken as not known (0), and the point is kept.
inline constexpr int64_t kMinWallTimeMs = 946'684'800'000;
inline constexpr int64_t kMaxWallTimeMs = 253'402'300'799'999;

// `at_unix_ms` when it lies within those bounds, else 0 (not known).
inline int64_t WallTimeOrUnknown(int64_t at_unix_ms) {
  return at_unix_ms >= kMinWallTimeMs && at_unix_ms <= kMaxWallTimeMs ? at_unix_ms : 0;
}

// OK, or InvalidArgument saying what is wrong with the name (quoting its start, repaired).
absl::Status CheckMetricName(std::string_view name);
// OK, or InvalidArgument "tokens -1: must be 0..1000000000000000".
absl::Status CheckTokens(int64_t tokens);

}  // namespace onset::common
