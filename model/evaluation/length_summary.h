// The summaries of a NIAH metric measured at several prompt lengths (docs/metrics.md, "A
// headline within the training length"): the headline is the mean over lengths within the
// training length, so that extrapolation (where RoPE and NoPE differ most) never leaks into
// it; the mean over longer lengths is reported apart. Torch-free.
#pragma once

#include <map>
#include <optional>

namespace onset::model {

struct LengthSummary {
  std::optional<double> within;  // mean over lengths <= seq_len; none when there is none
  std::optional<double> beyond;  // mean over lengths > seq_len
};

// `per_length`: prompt length -> the metric at that length (each length weighs the same).
LengthSummary SummariseLengths(const std::map<int, double>& per_length, int seq_len);

}  // namespace onset::model
