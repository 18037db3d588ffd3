#include "cli/views/cost_view.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/views/table.h"
#include "cli/views/trunk_view.h"
#include "proto/cell_names.h"

namespace onset::cli {
namespace {

// "arch=full window=- pos=rope tokens=3M" and then the study's other axes, the seed left out.
std::string GroupLabel(const v1::Cell& cell) {
  if (wire::RoleOf(cell) == wire::CellRole::kTrunk) return "trunks";
  std::vector<std::string> parts;
  std::set<std::string> named;
  for (const char* axis : {"arch", "window", "pos", "tokens"}) {
    named.insert(axis);
    auto it = cell.axes().find(axis);
    if (it == cell.axes().end()) continue;
    const std::string value =
        std::string(axis) == "tokens" ? FormatTokensText(it->second) : it->second;
    parts.push_back(absl::StrCat(axis, "=", value));
  }
  // A proto map's order is not defined: sort the others by name.
  std::map<std::string, std::string> others;
  for (const auto& [axis, value] : cell.axes()) {
    if (named.count(axis) == 0 && axis != "seed") others[axis] = value;
  }
  for (const auto& [axis, value] : others) parts.push_back(absl::StrCat(axis, "=", value));
  return absl::StrJoin(parts, " ");
}

void Add(const v1::Cell& cell, const Throughput& throughput, CostGroup* group) {
  const int64_t tokens = TokensToTrain(cell);
  ++group->cells;
  group->tokens += tokens;
  if (!(cell.train_flops_per_token() > 0)) {
    ++group->cells_without_flops;
    return;
  }
  const double flops = cell.train_flops_per_token() * static_cast<double>(tokens);
  group->flops += flops;
  group->device_hours += throughput.DeviceSeconds(flops, tokens) / 3600;
}

// "18080", "259.2", "0.833", "5.33e-06" hours; "-" when unknown.
std::string Hours(double hours, bool stated) {
  if (!stated) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, hours >= 100 ? "%.0f" : hours >= 1 ? "%.1f" : "%.3g", hours);
  return buf;
}

}  // namespace

absl::StatusOr<Throughput> Throughput::From(double peak_flops, double mfu,
                                            double tokens_per_second) {
  Throughput t;
  if (!(peak_flops >= 0) || !std::isfinite(peak_flops)) {
    return absl::InvalidArgumentError("--peak-flops: must be a positive FLOP/s, e.g. 9.89e14");
  }
  if (!(mfu >= 0 && mfu <= 1)) {
    return absl::InvalidArgumentError("--mfu: must be a fraction in (0, 1], e.g. 0.4");
  }
  if (!(tokens_per_second >= 0) || !std::isfinite(tokens_per_second)) {
    return absl::InvalidArgumentError("--tokens-per-second: must be positive");
  }
  if ((peak_flops > 0) != (mfu > 0)) {
    return absl::InvalidArgumentError(
        "--peak-flops and --mfu go together: the device's peak FLOP/s and the fraction of it "
        "training reaches");
  }
  if (tokens_per_second > 0 && peak_flops > 0) {
    return absl::InvalidArgumentError(
        "--tokens-per-second or --peak-flops with --mfu: state the throughput one way");
  }
  t.peak_flops = peak_flops;
  t.mfu = mfu;
  t.tokens_per_second = tokens_per_second;
  return t;
}

double Throughput::DeviceSeconds(double flops, int64_t tokens) const {
  if (tokens_per_second > 0) return static_cast<double>(tokens) / tokens_per_second;
  if (peak_flops > 0 && mfu > 0) return flops / (peak_flops * mfu);
  return 0;
}

std::string Throughput::Describe() const {
  if (tokens_per_second > 0) {
    return absl::StrCat("at ", FormatTokens(static_cast<int64_t>(std::llround(tokens_per_second))),
                        " tokens/s per device");
  }
  if (peak_flops > 0 && mfu > 0) {
    return absl::StrCat("at ", FormatValue(mfu * 100), "% MFU of ", FormatFlops(peak_flops),
                        " FLOP/s per device");
  }
  return "";
}

StudyCost EstimateCost(const v1::SubmitStudyResponse& preview, const Throughput& throughput) {
  const std::set<std::string> fresh(preview.new_cell_ids().begin(), preview.new_cell_ids().end());
  StudyCost cost;
  cost.total.label = "total";
  std::map<std::string, size_t> index;
  for (const v1::Cell& cell : preview.cells()) {
    if (fresh.count(cell.id()) == 0) continue;
    const std::string label = GroupLabel(cell);
    auto [it, added] = index.emplace(label, cost.groups.size());
    if (added) cost.groups.push_back(CostGroup{label});
    Add(cell, throughput, &cost.groups[it->second]);
    Add(cell, throughput, &cost.total);
  }
  return cost;
}

std::string RenderCost(const StudyCost& cost, const Throughput& throughput) {
  if (cost.total.cells == 0) return "nothing new to train\n";
  Table table({"COST", "CELLS", "TOKENS", "FLOPS", "DEVICE-HOURS"});
  for (size_t c = 1; c <= 4; ++c) table.AlignRight(c);
  const bool stated = throughput.Stated();
  for (const CostGroup& g : cost.groups) {
    table.AddRow({g.label, std::to_string(g.cells), FormatTokens(g.tokens), FormatFlops(g.flops),
                  Hours(g.device_hours, stated)});
  }
  const CostGroup& t = cost.total;
  table.AddRow({t.label, std::to_string(t.cells), FormatTokens(t.tokens), FormatFlops(t.flops),
                Hours(t.device_hours, stated)});
  std::string out = table.Render();
  if (stated) {
    absl::StrAppend(&out, "device-hours ", throughput.Describe(), "\n");
  } else {
    out += "device-hours: state a throughput with --peak-flops and --mfu, or --tokens-per-second\n";
  }
  if (t.cells_without_flops > 0) {
    absl::StrAppend(&out, t.cells_without_flops,
                    " cells have no FLOPs per token (a coordinator that does not size cells): "
                    "left out of FLOPS and DEVICE-HOURS\n");
  }
  return out;
}

std::string CostJson(const StudyCost& cost, const Throughput& throughput) {
  const bool stated = throughput.Stated();
  const auto group = [stated](const CostGroup& g) {
    return nlohmann::json{{"label", g.label},
                          {"cells", g.cells},
                          {"tokens", g.tokens},
                          {"flops", g.flops},
                          {"device_hours", stated ? nlohmann::json(g.device_hours) : nullptr},
                          {"cells_without_flops", g.cells_without_flops}};
  };
  nlohmann::json groups = nlohmann::json::array();
  for (const CostGroup& g : cost.groups) groups.push_back(group(g));
  nlohmann::json out = {{"groups", groups},
                        {"total", group(cost.total)},
                        {"throughput",
                         {{"peak_flops", throughput.peak_flops},
                          {"mfu", throughput.mfu},
                          {"tokens_per_second", throughput.tokens_per_second}}}};
  return out.dump();
}

}  // namespace onset::cli
