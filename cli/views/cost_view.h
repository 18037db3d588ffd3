// What a study will cost before it runs: the training FLOPs of the cells a submission adds (each
// cell's training FLOPs per token, model/config/flops.h, times the tokens it trains: a trunk to
// its end, a branch from its branch point) and, at a stated throughput, the device-hours. Pure
// functions of the API's messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onset/v1/onset.pb.h"

namespace onset::cli {

// How fast a device trains, as the user states it: its peak FLOP/s and the fraction of it that
// training reaches (MFU), or the tokens it trains per second (e.g. measured on the study's own
// cells). Nothing stated: FLOPs only.
struct Throughput {
  double peak_flops = 0;  // FLOP/s of one device, e.g. 9.89e14 for an H100's dense BF16
  double mfu = 0;         // in (0, 1]
  double tokens_per_second = 0;

  // InvalidArgument naming the flag: --peak-flops without --mfu (or the reverse), a value out of
  // range, or both ways stated at once.
  static absl::StatusOr<Throughput> From(double peak_flops, double mfu, double tokens_per_second);
  bool Stated() const { return tokens_per_second > 0 || (peak_flops > 0 && mfu > 0); }
  // Device-seconds to train `tokens` tokens at `flops` training FLOPs in all: FLOPs over the
  // achieved FLOP/s, or tokens over tokens per second. Data-parallel ranks share the work, so a
  // cell on several devices costs as many device-seconds as on one. 0 when nothing is stated.
  double DeviceSeconds(double flops, int64_t tokens) const;
  // "at 40% MFU of 9.89e14 FLOP/s per device", "at 52K tokens/s per device", or "".
  std::string Describe() const;
};

// The cost of one group of cells: those with the same display axes but the seed (every trunk in
// one group of its own).
struct CostGroup {
  std::string label;  // "arch=full window=- pos=rope tokens=3M", or "trunks"
  int cells = 0;
  int64_t tokens = 0;           // tokens to train
  double flops = 0;             // training FLOPs
  double device_hours = 0;      // 0 when no throughput is stated
  int cells_without_flops = 0;  // from a coordinator that does not size cells: left out of flops
};

struct StudyCost {
  std::vector<CostGroup> groups;  // in the order of their first cell
  CostGroup total;
};

// The cost of the cells `preview` would add (its new_cell_ids; every cell of a study not yet
// stored). Cells that exist already cost nothing.
StudyCost EstimateCost(const v1::SubmitStudyResponse& preview, const Throughput& throughput);

// One row per group and a total, then the throughput it assumes (or how to state one).
std::string RenderCost(const StudyCost& cost, const Throughput& throughput);
// {"groups": [{"label", "cells", "tokens", "flops", "device_hours"}...], "total": {...},
//  "throughput": {"peak_flops", "mfu", "tokens_per_second"}}; device_hours null when no
// throughput is stated.
std::string CostJson(const StudyCost& cost, const Throughput& throughput);

}  // namespace onset::cli
