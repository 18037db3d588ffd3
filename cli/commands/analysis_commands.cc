#include "cli/commands/analysis_commands.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/compare_params.h"
#include "analysis/default_threshold.h"
#include "analysis/power_law.h"
#include "base/metric_names.h"
#include "cli/commands/pooled_studies.h"
#include "cli/commands/study_commands.h"
#include "cli/exit_codes.h"
#include "cli/tensorboard/tensorboard_export.h"
#include "cli/views/compare.h"
#include "cli/views/export_view.h"
#include "cli/views/fit_view.h"
#include "cli/views/heads.h"
#include "cli/views/plot.h"
#include "cli/views/render.h"
#include "cli/views/trunk_view.h"
#include "proto/cell_names.h"

namespace onset::cli {
namespace {

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(part);
  }
  return out;
}

// The names of the metrics the studies' cells reported (their results' final values), sorted.
absl::StatusOr<std::vector<std::string>> StudyMetricNames(StudyClient& client,
                                                          const std::vector<std::string>& names) {
  std::set<std::string> found;
  for (const std::string& name : names) {
    absl::StatusOr<v1::GetResultsResponse> results = client.Results(name);
    if (!results.ok()) return results.status();
    for (const v1::CellResult& r : results->results()) {
      for (const auto& [metric, value] : r.final_metrics()) found.insert(metric);
    }
  }
  return std::vector<std::string>(found.begin(), found.end());
}

// The step compare, plot and fit share: the study and its curves of spec.metric, grouped. On
// failure prints the reason and returns the exit code.
struct Grouped {
  v1::GetStudyResponse study;
  Curves curves;
  CompareTable table;
};
std::optional<int> FetchAndGroup(StudyClient& client, const std::vector<std::string>& names,
                                 const CompareSpec& spec, std::ostream& err, Grouped* out) {
  std::vector<std::string> metrics = {spec.metric};
  for (const std::string& control : analysis::ControlMetrics(spec.metric)) {
    metrics.push_back(control);
  }
  if (!spec.best_over.axis.empty() && spec.best_over.metric != spec.metric) {
    metrics.push_back(spec.best_over.metric);  // what chooses the nuisance axis's value
  }
  // One study, or several pooled (pooled_studies.h: the same experiment counts once).
  absl::StatusOr<PooledStudies> pooled = PoolStudies(client, names, metrics);
  if (!pooled.ok()) return ReportError(pooled.status(), err);
  for (const std::string& note : pooled->notes) err << note << "\n";
  const std::string study_name = absl::StrJoin(names, ", ");
  std::string error;
  out->table = Compare(pooled->study, pooled->curves, spec, &error);
  if (!error.empty()) {
    err << error << "\n";
    return kExitBadInput;
  }
  if (out->table.rows.empty() && out->table.cells_without_flops > 0) {
    err << "no cell of study " << study_name << " has a FLOPs count (the coordinator is older "
        << "than --x flops); use --x tokens\n";
    return kExitFailure;
  }
  if (out->table.rows.empty()) {
    err << "no cell of study " << study_name << " has reported " << spec.metric << " yet";
    absl::StatusOr<std::vector<std::string>> metrics = StudyMetricNames(client, names);
    if (metrics.ok() && !metrics->empty()) {
      err << "; its metrics: " << absl::StrJoin(*metrics, ", ");
    }
    err << "\n";
    return kExitFailure;
  }
  out->study = std::move(pooled->study);
  out->curves = std::move(pooled->curves);
  return std::nullopt;
}

// The spec of a command's comparison flags; nullopt (and the message, as a flag's) when one is
// bad.
std::optional<CompareSpec> ParseSpec(const analysis::CompareParams& params, bool threshold_required,
                                     std::ostream& err) {
  absl::StatusOr<CompareSpec> spec = analysis::ParseCompareParams(params, threshold_required);
  if (spec.ok()) return *spec;
  err << "--" << spec.status().message() << "\n";
  return std::nullopt;
}

}  // namespace

int CompareCommand(StudyClient& client, const CompareOptions& given, std::ostream& out,
                   std::ostream& err) {
  CompareOptions options = given;
  // Without --metric: the study's headline metric, as the dashboard opens on it.
  if (options.metric.empty()) {
    absl::StatusOr<std::vector<std::string>> metrics = StudyMetricNames(client, options.studies);
    if (!metrics.ok()) return ReportError(metrics.status(), err);
    options.metric = metric::HeadlineMetric(*metrics);
    if (options.metric.empty()) {
      err << "no cell of study " << absl::StrJoin(options.studies, ", ")
          << " has reported a metric yet\n";
      return kExitFailure;
    }
    err << "metric " << options.metric << ": the study's headline (--metric to choose another)\n";
  }
  // Without --threshold: the dashboard's opening threshold (analysis/default_threshold.h).
  if (options.threshold.empty()) {
    absl::StatusOr<PooledStudies> pooled = PoolStudies(client, options.studies, {options.metric});
    if (!pooled.ok()) return ReportError(pooled.status(), err);
    const std::optional<analysis::DefaultThreshold> chosen =
        analysis::ChooseThreshold(options.metric, pooled->curves);
    if (!chosen) {
      err << "no cell of study " << absl::StrJoin(options.studies, ", ") << " has reported "
          << options.metric << " yet, so there is no threshold to choose: give --threshold";
      absl::StatusOr<std::vector<std::string>> metrics = StudyMetricNames(client, options.studies);
      if (metrics.ok() && !metrics->empty()) {
        err << " (its metrics: " << absl::StrJoin(*metrics, ", ") << ")";
      }
      err << "\n";
      return kExitFailure;
    }
    std::ostringstream value;
    value << chosen->value;
    options.threshold = value.str();
    err << "threshold " << options.threshold << ": " << chosen->why
        << " (--threshold to choose another)\n";
  }
  const std::optional<CompareSpec> parsed =
      ParseSpec({options.metric, options.threshold, options.direction, options.x, options.by,
                 options.baseline, options.level, options.bootstrap, options.bootstrap_seed,
                 options.best_over, options.select, options.select_on_seeds},
                /*threshold_required=*/true, err);
  if (!parsed) return kExitBadInput;
  const CompareSpec& spec = *parsed;
  Grouped g;
  if (std::optional<int> failed = FetchAndGroup(client, options.studies, spec, err, &g)) {
    return *failed;
  }
  out << (options.json ? CompareJson(g.table, spec) : RenderCompare(g.table, spec));
  return kExitOk;
}

int PlotCommand(StudyClient& client, const PlotCommandOptions& options, std::ostream& out,
                std::ostream& err) {
  if (options.emergence && options.threshold.empty()) {
    err << "--emergence needs --threshold: the fraction of cells past which value\n";
    return kExitBadInput;
  }
  analysis::CompareParams params;
  params.metric = options.metric;
  params.threshold = options.threshold;
  params.direction = options.direction;
  params.x = options.x;
  params.by = options.by;
  params.level = options.level;
  params.best_over = options.best_over;
  params.select = options.select;
  params.select_on_seeds = options.select_on_seeds;
  const std::optional<CompareSpec> parsed = ParseSpec(params, /*threshold_required=*/false, err);
  if (!parsed) return kExitBadInput;
  const CompareSpec& spec = *parsed;
  Grouped g;
  if (std::optional<int> failed = FetchAndGroup(client, options.studies, spec, err, &g)) {
    return *failed;
  }
  const CompareTable& table = g.table;
  const Curves* curves = &g.curves;
  err << RenderBestOverChoices(table, spec);
  PlotOptions plot;
  plot.threshold = !options.threshold.empty();
  plot.emergence = options.emergence;
  plot.title = options.title.empty() ? absl::StrJoin(options.studies, " + ") + ": " + options.metric
                                     : options.title;
  const std::string svg = RenderSvg(table, *curves, spec, plot);
  if (options.out == "-") {
    out << svg;
    return kExitOk;
  }
  std::ofstream file(options.out, std::ios::binary | std::ios::trunc);
  file << svg;
  file.close();
  if (!file) {
    err << "--out: cannot write " << options.out << "\n";
    return kExitFailure;
  }
  err << "wrote " << options.out << ": " << table.rows.size() << " groups of " << options.metric
      << "\n";
  return kExitOk;
}

int FitCommand(StudyClient& client, const FitOptions& options, std::ostream& out,
               std::ostream& err) {
  analysis::CompareParams params;
  params.metric = options.metric;
  params.by = options.by;
  params.best_over = options.best_over;
  params.select = options.select;
  params.select_on_seeds = options.select_on_seeds;
  const std::optional<CompareSpec> spec = ParseSpec(params, /*threshold_required=*/false, err);
  if (!spec) return kExitBadInput;
  Grouped g;
  if (std::optional<int> failed = FetchAndGroup(client, options.studies, *spec, err, &g)) {
    return *failed;
  }
  std::vector<FitGroup> groups;
  for (const CompareRow& row : g.table.rows) {
    std::vector<analysis::Point> points;
    for (const std::string& id : row.cell_ids) {
      for (const auto& [t, v] : g.curves.at(id).at(options.metric)) points.push_back({t, v});
    }
    FitGroup group;
    group.axes = row.axes;
    group.cell_ids = row.cell_ids;
    group.points = points.size();
    group.fit = analysis::FitPowerLaw(points, options.min_tokens, &group.problem);
    groups.push_back(std::move(group));
  }
  out << (options.json ? FitJson(options.metric, options.min_tokens, groups)
                       : RenderFit(options.metric, g.table.by, groups));
  if (!options.json) out << RenderBestOverChoices(g.table, *spec);
  return kExitOk;
}

int HeadsCommand(StudyClient& client, const std::string& study, const std::string& cell,
                 int64_t at_tokens, bool json, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Curves> curves = client.Metrics(study, {}, {cell});
  if (!curves.ok()) return ReportError(curves.status(), err);
  // The coordinator answers for the one cell `cell` names (its id or a unique prefix of it).
  const auto it = curves->size() == 1 ? curves->begin() : curves->find(cell);
  const HeadMap map =
      BuildHeadMap(it == curves->end() ? Curves::mapped_type{} : it->second, at_tokens);
  if (!json) {
    out << RenderHeadMap(map);
    return kExitOk;
  }
  nlohmann::json j = nlohmann::json::parse(analysis::HeadMapJson(map));
  j["study"] = study;
  j["cell_id"] = it == curves->end() ? cell : it->first;
  out << j.dump(2) << "\n";
  return kExitOk;
}

namespace {

// What every export format writes: the studies' grid cells and their points with their times;
// several studies pooled as compare pools them (the same experiment once).
absl::StatusOr<PooledStudies> FetchExport(StudyClient& client, const ExportOptions& options,
                                          std::ostream& err) {
  absl::StatusOr<PooledStudies> pooled =
      PoolStudies(client, options.studies, SplitList(options.metrics), /*with_times=*/true);
  if (pooled.ok()) {
    for (const std::string& note : pooled->notes) err << note << "\n";
  }
  return pooled;
}

}  // namespace

int ExportCommand(StudyClient& client, const ExportOptions& options, std::ostream& out,
                  std::ostream& err) {
  if (options.format != "csv" && options.format != "jsonl") {
    err << "--format: must be csv or jsonl here (tensorboard writes a directory: --out DIR), got '"
        << options.format << "'\n";
    return kExitBadInput;
  }
  absl::StatusOr<PooledStudies> data = FetchExport(client, options, err);
  if (!data.ok()) return ReportError(data.status(), err);
  WriteExport(options.studies.front(), data->study, data->curves, &data->times,
              options.format == "csv" ? ExportFormat::kCsv : ExportFormat::kJsonLines, out);
  return kExitOk;
}

int TensorBoardExportCommand(StudyClient& client, const ExportOptions& options,
                             const std::string& dir, std::ostream& out, std::ostream& err) {
  if (dir.empty()) {
    err << "--format tensorboard: give the directory to write with --out DIR\n";
    return kExitBadInput;
  }
  absl::StatusOr<PooledStudies> data = FetchExport(client, options, err);
  if (!data.ok()) return ReportError(data.status(), err);
  std::map<std::string, std::string> configs;
  for (const v1::Cell& cell : data->study.cells()) {
    if (data->curves.count(cell.id()) == 0) continue;
    absl::StatusOr<v1::DescribeCellResponse> described =
        client.DescribeCell(cell.study(), cell.id());
    if (!described.ok()) return ReportError(described.status(), err);
    configs[cell.id()] = described->config_json();
  }
  if (absl::Status s = tensorboard::WriteTensorBoard(options.studies.front(), data->study,
                                                     data->curves, &data->times, configs, dir);
      !s.ok()) {
    err << "--out: " << s.message() << "\n";
    return kExitFailure;
  }
  out << "wrote " << configs.size() << " runs to " << dir << " (tensorboard --logdir " << dir
      << ")\n";
  return kExitOk;
}

int ExportCommand(StudyClient& client, const ExportOptions& options, const std::string& path,
                  std::ostream& out, std::ostream& err) {
  if (options.format == "tensorboard") {
    return TensorBoardExportCommand(client, options, path, out, err);
  }
  if (path.empty()) return ExportCommand(client, options, out, err);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "--out: cannot write " << path << "\n";
    return kExitFailure;
  }
  const int code = ExportCommand(client, options, file, err);
  file.close();
  if (!file) {
    err << "--out: writing " << path << " failed\n";
    return kExitFailure;
  }
  return code;
}

namespace {

// --best-over, --select, --select-on-seeds: compare's, plot's and fit's (best_over.h).
void AddSelectionFlags(CLI::App* app, std::string* best_over, std::string* select,
                       std::string* select_on_seeds) {
  app->add_option("--best-over", *best_over,
                  "an axis to choose within each group by --select instead of grouping by it "
                  "(e.g. train.lr: each architecture at its best learning rate)");
  app->add_option("--select", *select,
                  "how --best-over chooses: METRIC[:min|max|crossing], the mean final value or "
                  "the earliest median crossing of --threshold (default: " +
                      std::string(metric::kHeldoutLoss) + ":min)");
  app->add_option("--select-on-seeds", *select_on_seeds,
                  "choose on these seeds' cells only (e.g. 0,1) and use the others, so the "
                  "choice is not scored on the data that made it");
}

// compare: tokens-to-threshold per group.
void AddCompareCommand(CLI::App& app, CommandTable& table) {
  auto compare = std::make_shared<CompareOptions>();
  CLI::App* compare_app = app.add_subcommand(
      "compare",
      "which cells reach a metric threshold in fewer tokens: tokens-to-threshold per "
      "group of cells (seeds aggregated), final value, speed-up against a baseline");
  compare_app
      ->add_option("STUDY", compare->studies,
                   "study name; several: their cells pooled, the same experiment (configs equal "
                   "but for the study) counted once")
      ->required();
  compare_app->add_option("--metric", compare->metric,
                          "metric name, e.g. " + metric::AtLength(metric::kNiahAcc, 512) + ", " +
                              metric::kNiahAccBeyondWindow + ", " + metric::kShortLoss + ", " +
                              metric::kRhMaxFull +
                              " (default: the study's headline, its first NIAH accuracy, else " +
                              metric::kTrainLoss + ")");
  compare_app
      ->add_option("--threshold", compare->threshold,
                   "the value to reach (default: 0.5 for an accuracy, else halfway between the "
                   "cells' median first and last values)")
      ->type_name("FLOAT");
  compare_app
      ->add_option("--direction", compare->direction,
                   "up (reach from below) or down (fall to it); auto: down for losses")
      ->capture_default_str();
  compare_app->add_option("--by", compare->by,
                          "group by these axes, e.g. arch,pos (default: every axis but seed)");
  compare_app->add_option("--baseline", compare->baseline,
                          "speed-up against the group with this axis value, e.g. arch=full");
  compare_app
      ->add_option("--x", compare->x,
                   "count tokens, or training FLOPs (tokens x FLOPs per token): flops")
      ->check(CLI::IsMember({"tokens", "flops"}))
      ->capture_default_str();
  compare_app
      ->add_option("--level", compare->level,
                   "confidence level of the intervals: the median's (Brookmeyer-Crowley) and the "
                   "speed-up's (percentile bootstrap over seeds)")
      ->type_name("FLOAT")
      ->capture_default_str();
  compare_app
      ->add_option("--bootstrap", compare->bootstrap,
                   "resamples of the seeds for the speed-up's interval")
      ->type_name("INT")
      ->capture_default_str();
  compare_app
      ->add_option("--bootstrap-seed", compare->bootstrap_seed,
                   "seed of the resampling (the same seed gives the same interval)")
      ->type_name("INT")
      ->capture_default_str();
  AddSelectionFlags(compare_app, &compare->best_over, &compare->select, &compare->select_on_seeds);
  compare_app->add_flag("--json", compare->json, "print JSON");
  table.push_back({compare_app, Needs::kReader, "", "", [compare](const CommandContext& c) {
                     return CompareCommand(*c.client, *compare, *c.out, *c.err);
                   }});
}

// plot: the curves (or the emergence) as an SVG.
void AddPlotCommand(CLI::App& app, CommandTable& table) {
  auto plot = std::make_shared<PlotCommandOptions>();
  CLI::App* plot_app = app.add_subcommand(
      "plot",
      "a metric against tokens (log axis) as an SVG: one line per group of cells, the "
      "seeds' range shaded, the threshold dashed, groups that never reached it circled");
  plot_app->add_option("STUDY", plot->studies, "study name; several: pooled, as compare's")
      ->required();
  plot_app->add_option("--metric", plot->metric, "metric name, e.g. niah/acc@512")->required();
  plot_app->add_option("--threshold", plot->threshold, "draw this value and each group's T(x)")
      ->type_name("FLOAT");
  plot_app->add_option("--by", plot->by, "group by these axes (default: every axis but seed)");
  plot_app->add_option("--direction", plot->direction, "as compare's")->capture_default_str();
  plot_app->add_option("--x", plot->x, "the x axis: tokens or flops (training FLOPs)")
      ->check(CLI::IsMember({"tokens", "flops"}))
      ->capture_default_str();
  plot_app
      ->add_option("--level", plot->level,
                   "with --emergence: the confidence level of the band around each curve")
      ->type_name("FLOAT")
      ->capture_default_str();
  plot_app->add_option("--title", plot->title, "the figure's title");
  plot_app->add_flag("--emergence", plot->emergence,
                     "draw each group's fraction of cells past --threshold against tokens "
                     "(Kaplan-Meier) instead of the metric");
  AddSelectionFlags(plot_app, &plot->best_over, &plot->select, &plot->select_on_seeds);
  plot_app->add_option("--out", plot->out, "the SVG file to write ('-': stdout)")->required();
  table.push_back({plot_app, Needs::kReader, "", "", [plot](const CommandContext& c) {
                     return PlotCommand(*c.client, *plot, *c.out, *c.err);
                   }});
}

// fit: a power law per group.
void AddFitCommand(CLI::App& app, CommandTable& table) {
  auto fit = std::make_shared<FitOptions>();
  CLI::App* fit_app = app.add_subcommand(
      "fit", "fit L(D) = E + B (D/D0)^-beta to a loss against tokens per group of cells");
  fit_app->add_option("STUDY", fit->studies, "study name; several: pooled, as compare's")
      ->required();
  fit_app->add_option("--metric", fit->metric, "a loss metric")->capture_default_str();
  fit_app->add_option("--by", fit->by, "group by these axes (default: every axis but seed)");
  fit_app
      ->add_option("--min-tokens", fit->min_tokens,
                   "fit the points from this many tokens on (leave out the warm-up)")
      ->check(CLI::NonNegativeNumber);
  AddSelectionFlags(fit_app, &fit->best_over, &fit->select, &fit->select_on_seeds);
  fit_app->add_flag("--json", fit->json, "print JSON");
  table.push_back({fit_app, Needs::kReader, "", "", [fit](const CommandContext& c) {
                     return FitCommand(*c.client, *fit, *c.out, *c.err);
                   }});
}

// heads: a cell's retrieval-head scores.
void AddHeadsCommand(CLI::App& app, CommandTable& table) {
  struct HeadsFlags {
    std::string study;
    std::string cell;
    int64_t tokens = 0;
    bool json = false;
  };
  auto heads = std::make_shared<HeadsFlags>();
  CLI::App* heads_app = app.add_subcommand(
      "heads", "a cell's retrieval-head scores per layer and head at an eval point");
  heads_app->add_option("STUDY", heads->study, "study name")->required();
  heads_app->add_option("CELL", heads->cell, "the cell's id or a unique prefix of it")->required();
  heads_app
      ->add_option("--tokens", heads->tokens,
                   "the last eval point at or before this (default: "
                   "the last)")
      ->check(CLI::NonNegativeNumber);
  heads_app->add_flag("--json", heads->json, "print JSON");
  table.push_back({heads_app, Needs::kReader, "", "", [heads](const CommandContext& c) {
                     return HeadsCommand(*c.client, heads->study, heads->cell, heads->tokens,
                                         heads->json, *c.out, *c.err);
                   }});
}

// export: every metric point.
void AddExportCommand(CLI::App& app, CommandTable& table) {
  struct ExportFlags {
    ExportOptions options;
    std::string out;
  };
  auto exports = std::make_shared<ExportFlags>();
  CLI::App* export_app = app.add_subcommand(
      "export",
      "every metric point of a study's (or several studies') cells, as CSV or JSON lines, or as "
      "TensorBoard runs (one per cell) in the directory --out names");
  export_app
      ->add_option("STUDY", exports->options.studies,
                   "study name; several: their cells pooled as compare's (the same experiment "
                   "once), each row naming its cell's study")
      ->required();
  export_app->add_option("--format", exports->options.format, "csv, jsonl or tensorboard")
      ->check(CLI::IsMember({"csv", "jsonl", "tensorboard"}))
      ->capture_default_str();
  export_app->add_option("--metrics", exports->options.metrics,
                         "only these metrics, comma-separated (default: all)");
  export_app->add_option("--out", exports->out,
                         "write to this file instead of stdout (tensorboard: this directory, "
                         "required)");
  table.push_back({export_app, Needs::kReader, "", "", [exports](const CommandContext& c) {
                     return ExportCommand(*c.client, exports->options, exports->out, *c.out,
                                          *c.err);
                   }});
}

}  // namespace

void AddAnalysisCommands(CLI::App& app, CommandTable& table) {
  AddCompareCommand(app, table);
  AddPlotCommand(app, table);
  AddFitCommand(app, table);
  AddHeadsCommand(app, table);
  AddExportCommand(app, table);
}

}  // namespace onset::cli
