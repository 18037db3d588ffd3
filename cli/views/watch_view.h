// What `onset watch` knows of a study, rebuilt from WatchStudy messages, and the lines it
// prints: one per cell state change, and the study's progress when it moves. Pure: no gRPC, no
// clocks besides the times the caller passes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "cli/views/style.h"
#include "onset/v1/onset.pb.h"

namespace onset::cli {

class WatchView {
 public:
  // `progress_every_ms`: the study's progress line is printed at most this often; 0 = never
  // (on a terminal the caller draws progress bars instead, progress_bars.h).
  explicit WatchView(Style style = Style(), int64_t progress_every_ms = 10'000)
      : style_(style), progress_every_ms_(progress_every_ms) {}

  // Every cell as the messages so far describe it.
  const v1::GetStudyResponse& study() const { return study_; }

  // Takes one message (received at `now_unix_ms`) and returns the text to print for it (whole
  // lines, possibly none).
  std::string Apply(const v1::WatchStudyResponse& message, int64_t now_unix_ms);

  // Resume a broken stream after this (0 before the first message, and while a snapshot that
  // comes in several messages is incomplete: a break then asks for the whole snapshot again).
  int64_t last_seq() const { return snapshot_pending_ ? 0 : last_seq_; }
  // The study has cells and none of them can still change by itself (every one succeeded,
  // failed, diverged or was cancelled).
  bool Finished() const;
  // kExitOk when every cell succeeded or diverged, kExitCellsFailed otherwise (call when
  // Finished()).
  int ExitCode() const;
  // "demo: 4 cells: 3 succeeded, 1 failed".
  std::string Summary() const;

 private:
  std::string ProgressLine() const;

  const Style style_;
  const int64_t progress_every_ms_;
  v1::GetStudyResponse study_;        // the latest state of every cell
  std::map<std::string, int> index_;  // cell id -> position in study_.cells()
  int64_t last_seq_ = 0;
  bool snapshot_pending_ = false;  // the next message continues the snapshot
  int64_t progress_printed_at_ms_ = 0;
  std::string progress_printed_;
};

// "arch=swa window=16 pos=rope tokens=1M seed=0 train.lr=0.001": the named axes in order, then
// the others sorted.
std::string DescribeAxes(const google::protobuf::Map<std::string, std::string>& axes);

}  // namespace onset::cli
