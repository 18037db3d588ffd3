// `onset compare` and `onset export`: a study's curves fetched from the coordinator
// (StreamMetrics), analysed (cli/views/compare.h) or written out for other tools.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/metric_names.h"
#include "cli/client/study_client.h"
#include "cli/commands/command.h"

namespace onset::cli {

struct CompareOptions {
  std::vector<std::string> studies;  // one, or several pooled (pooled_studies.h)
  std::string metric;                // empty: the study's headline (metric::HeadlineMetric)
  std::string threshold;             // a number; empty: analysis::ChooseThreshold's
  std::string direction = "auto";    // auto (down for losses), up or down
  std::string by;                    // comma-separated axes; empty: every axis but seed
  std::string baseline;              // AXIS=VALUE or empty
  std::string x = "tokens";          // tokens or flops: what T(x) and the speed-up count
  std::string level = "0.95";        // of the intervals
  std::string bootstrap = "2000";    // the speed-up interval's resamples
  std::string bootstrap_seed = "1";
  std::string best_over;        // a nuisance axis chosen per group
  std::string select;           // its selection rule, METRIC[:min|max|crossing]
  std::string select_on_seeds;  // the seeds that choose (the others are compared)
  bool json = false;
};
// Exit codes: 0, 1 (coordinator, unknown study), 2 (bad flag, unknown axis). Beside a NIAH
// accuracy it also fetches its controls (analysis::ControlMetrics).
int CompareCommand(StudyClient& client, const CompareOptions& options, std::ostream& out,
                   std::ostream& err);

struct PlotCommandOptions {
  std::vector<std::string> studies;  // one, or several pooled (as compare's)
  std::string metric;
  std::string by;         // as compare's
  std::string threshold;  // drawn, and T(x) in the legend, when given (not empty)
  std::string direction = "auto";
  std::string x = "tokens";  // the x axis: tokens or flops
  std::string out;           // the SVG file; "-" for stdout
  std::string title;
  // Draw each group's fraction of cells past the threshold against tokens (Kaplan-Meier)
  // instead of the metric; needs `threshold`.
  std::string level = "0.95";  // --emergence: the band's confidence level
  bool emergence = false;
  std::string best_over, select, select_on_seeds;  // as compare's
};
// Exit codes as compare's (2 also for --emergence without --threshold).
int PlotCommand(StudyClient& client, const PlotCommandOptions& options, std::ostream& out,
                std::ostream& err);

struct FitOptions {
  std::vector<std::string> studies;  // one, or several pooled (as compare's)
  std::string metric = metric::kHeldoutLoss;
  std::string by;          // as compare's
  int64_t min_tokens = 0;  // fit only the points from this many tokens on (skip warm-up)
  std::string best_over, select, select_on_seeds;  // as compare's
  bool json = false;
};
// L(D) = E + B (D / D0)^-beta per group, the group's cells (seeds) pooled (analysis/power_law.h).
int FitCommand(StudyClient& client, const FitOptions& options, std::ostream& out,
               std::ostream& err);

// `onset heads STUDY CELL [--tokens N]`: the cell's layer x head retrieval scores.
int HeadsCommand(StudyClient& client, const std::string& study, const std::string& cell,
                 int64_t at_tokens, bool json, std::ostream& out, std::ostream& err);

struct ExportOptions {
  std::vector<std::string> studies;  // one, or several pooled (pooled_studies.h)
  std::string format = "csv";  // csv, jsonl or tensorboard (a directory: tensorboard_export.h)
  std::string metrics;         // comma-separated names; empty: all
};
// One row per metric point: study (the cell's), cell_id, state, every display axis (CSV columns
// "axis.NAME", JSON object "axes"), metric, tokens, value (NaN: an empty CSV field, JSON null),
// at_unix_ms (when it was measured; not known: an empty CSV field, JSON null).
int ExportCommand(StudyClient& client, const ExportOptions& options, std::ostream& out,
                  std::ostream& err);

// ExportCommand into the file at `path` (created or truncated); to `out` when `path` is empty.
int ExportCommand(StudyClient& client, const ExportOptions& options, const std::string& path,
                  std::ostream& out, std::ostream& err);

// Adds compare, plot, fit, heads and export to `app`.
void AddAnalysisCommands(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
