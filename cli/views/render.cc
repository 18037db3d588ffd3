#include "cli/views/render.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/metric_names.h"
#include "cli/views/trunk_view.h"
#include "proto/cell_names.h"

namespace onset::cli {
namespace {

constexpr size_t kErrorChars = 48;

std::string Axis(const v1::Cell& cell, const std::string& name) {
  auto it = cell.axes().find(name);
  return it == cell.axes().end() ? "-" : it->second;
}

constexpr const char* kNamedAxes[] = {"arch", "window", "pos", "tokens", "seed"};

std::string TokensAxis(const v1::Cell& cell) {
  auto it = cell.axes().find("tokens");
  return it == cell.axes().end() ? "-" : FormatTokensText(it->second);
}

// The axis columns of a cell table: the named axes, then `extra`.
std::vector<std::string> AxisHeaders(const std::vector<std::string>& extra) {
  std::vector<std::string> headers = {"ARCH", "WINDOW", "POS", "TOKENS", "SEED"};
  headers.insert(headers.end(), extra.begin(), extra.end());
  return headers;
}

std::vector<std::string> AxisCells(const v1::Cell& cell, const std::vector<std::string>& extra) {
  std::vector<std::string> row = {Axis(cell, "arch"), Axis(cell, "window"), Axis(cell, "pos"),
                                  TokensAxis(cell), Axis(cell, "seed")};
  for (const std::string& axis : extra) row.push_back(Axis(cell, axis));
  return row;
}

template <typename T>
void Append(std::vector<T>* to, const std::vector<T>& more) {
  to->insert(to->end(), more.begin(), more.end());
}

// Sort key of a metric column; see ResultColumns.
std::tuple<int, long, std::string> ColumnKey(const std::string& name) {
  if (name == metric::kTrainLoss) return {0, 0, name};
  if (name == metric::kHeldoutLoss) return {1, 0, name};
  if (name == metric::kShortLoss) return {2, 0, name};
  if (metric::StartsWith(name, metric::kEvalFamily)) return {3, 0, name};
  if (name == metric::kNiahAcc) return {4, 0, name};
  if (const std::optional<int> length = metric::LengthOf(name, metric::kNiahAcc)) {
    return {5, *length, name};
  }
  if (metric::StartsWith(name, metric::kNiahFamily)) return {6, 0, name};
  if (metric::StartsWith(name, metric::kRetrievalHeadFamily)) return {7, 0, name};
  return {8, 0, name};
}

// The table answers "did each cell learn to retrieve": losses, the headline NIAH accuracy per
// length and by the study's window, the copy control, the retrieval-head summaries and the
// ablation's top-K against its baseline mean. Throughput, timings and schedule figures are
// progress, not results; per-head scores, per-depth and per-length breakdowns of the control
// and the variants, the own-window buckets and the baseline's spread are detail: JSON output
// (and onset export) has them all.
bool IsResultColumn(const std::string& name) {
  if (absl::EndsWith(name, "seconds")) return false;
  if (metric::ParseHeadName(name, metric::kRhScore) ||
      metric::IsAtDepth(name, metric::kNiahAccDepth)) {
    return false;
  }
  if (name == metric::kNiahAccInOwnWindow || name == metric::kNiahAccBeyondOwnWindow) return false;
  if (metric::StartsWith(name, metric::kNiahFamily) &&
      !metric::StartsWith(name, metric::kNiahAcc) && name.find('@') != std::string::npos) {
    return false;  // the controls and the variants at each length
  }
  if (metric::IsSpreadDetail(name)) return false;
  return metric::IsEvaluationMetric(name) || name == metric::kTrainLoss;
}

}  // namespace

std::string StudySummary(const v1::Study& study, const Style& style) {
  std::vector<std::string> parts;
  for (v1::CellState state : wire::kCellStates) {
    const std::string name(wire::StateName(state));
    auto it = study.cells_by_state().find(name);
    if (it != study.cells_by_state().end() && it->second > 0) {
      parts.push_back(absl::StrCat(it->second, " ", name));
    }
  }
  std::string text = absl::StrCat(study.name(), ": ", study.cells_total(),
                                  study.cells_total() == 1 ? " cell" : " cells");
  if (!parts.empty()) absl::StrAppend(&text, ": ", absl::StrJoin(parts, ", "));
  // A pattern of failures is the first thing to see, on its own line.
  if (!study.alert().empty()) absl::StrAppend(&text, "\n", style.Alert("!! " + study.alert()));
  if (!study.waiting().empty()) absl::StrAppend(&text, "\nwaiting: ", study.waiting());
  return text;
}

std::string RenderWorkers(const v1::ListWorkersResponse& workers, int64_t now_unix_ms) {
  const std::string not_live =
      workers.not_live() > 0
          ? absl::StrCat("(", workers.not_live(),
                         workers.not_live() == 1 ? " worker that exited or went silent is"
                                                 : " workers that exited or went silent are",
                         " not shown: onset workers --all)\n")
          : "";
  if (workers.workers().empty()) return "no live workers\n" + not_live;
  Table table({"WORKER", "HOST", "SLURM JOB", "DEVICES", "JOBS", "LAST SEEN", "VERSION"});
  table.AlignRight(5);
  for (const v1::Worker& w : workers.workers()) {
    std::vector<std::string> jobs;
    for (const v1::Worker::Job& j : w.jobs()) {
      std::string job = absl::StrCat(j.study(), "/", j.cell_id(), "#", j.attempt());
      if (!j.devices().empty()) absl::StrAppend(&job, " on ", FormatDevices(j.devices()));
      jobs.push_back(std::move(job));
    }
    const double age = std::max<int64_t>(0, now_unix_ms - w.last_seen_unix_ms()) / 1000.0;
    // A worker that names no devices runs `slots` jobs at once.
    const std::string devices =
        w.devices().empty() ? absl::StrCat(w.slots(), " slots") : FormatDevices(w.devices());
    // A worker that exited says when it did.
    const std::string seen =
        FormatDuration(age) + " ago" + (w.exited_unix_ms() > 0 ? ", exited" : "");
    table.AddRow({w.id(), w.host(), w.slurm_job().empty() ? "-" : w.slurm_job(), devices,
                  jobs.empty() ? "-" : absl::StrJoin(jobs, "; "), seen, w.version()});
  }
  std::string text = table.Render();
  if (workers.omitted() > 0) {
    absl::StrAppend(&text, "(", workers.omitted(),
                    " workers seen longer ago are not shown: the list is bounded)\n");
  }
  return text + not_live;
}

std::string RenderStudyList(const v1::ListStudiesResponse& studies) {
  if (studies.studies().empty()) return "no studies\n";
  const bool tagged = std::any_of(studies.studies().begin(), studies.studies().end(),
                                  [](const v1::Study& s) { return s.tags_size() > 0; });
  std::vector<std::string> headers = {"STUDY"};
  if (tagged) headers.push_back("TAGS");
  Append(&headers,
         {"CELLS", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "DIVERGED", "CANCELLED", "SOURCE"});
  Table table(headers);
  for (size_t c = tagged ? 2 : 1; c <= (tagged ? 8u : 7u); ++c) table.AlignRight(c);
  for (const v1::Study& s : studies.studies()) {
    auto count = [&](v1::CellState state) {
      auto it = s.cells_by_state().find(std::string(wire::StateName(state)));
      return it == s.cells_by_state().end() ? int64_t{0} : int64_t{it->second};
    };
    auto cell = [&](v1::CellState state) { return std::to_string(count(state)); };
    // Cells waiting out a retry backoff are queued as far as this overview goes.
    const std::string queued =
        std::to_string(count(v1::CELL_STATE_QUEUED) + count(v1::CELL_STATE_BACKOFF));
    std::vector<std::string> row = {s.name()};
    if (tagged) row.push_back(s.tags().empty() ? "-" : absl::StrJoin(s.tags(), ","));
    Append(&row, {std::to_string(s.cells_total()), queued, cell(v1::CELL_STATE_RUNNING),
                  cell(v1::CELL_STATE_SUCCEEDED), cell(v1::CELL_STATE_FAILED),
                  cell(v1::CELL_STATE_DIVERGED), cell(v1::CELL_STATE_CANCELLED), s.source_name()});
    table.AddRow(std::move(row));
  }
  return table.Render();
}

std::vector<std::string> ExtraAxes(const google::protobuf::RepeatedPtrField<v1::Cell>& cells) {
  std::set<std::string> extra;
  for (const v1::Cell& cell : cells) {
    for (const auto& [axis, value] : cell.axes()) {
      if (std::find(std::begin(kNamedAxes), std::end(kNamedAxes), axis) == std::end(kNamedAxes)) {
        extra.insert(axis);
      }
    }
  }
  return {extra.begin(), extra.end()};
}

std::string FormatDevices(const google::protobuf::RepeatedPtrField<std::string>& devices) {
  std::string out, kind;
  for (const std::string& d : devices) {
    const size_t colon = d.find(':');
    const std::string prefix = colon == std::string::npos ? "" : d.substr(0, colon + 1);
    if (!out.empty()) out += ",";
    out += !prefix.empty() && prefix == kind ? d.substr(prefix.size()) : d;
    kind = prefix;
  }
  return out;
}

std::string StudyProgress(const v1::GetStudyResponse& study) {
  int64_t done = 0, total = 0;
  double throughput = 0;
  for (const v1::Cell& cell : study.cells()) {
    // The tokens that will actually be trained: a trunk once, each branch from its branch point.
    total += TokensToTrain(cell);
    if (wire::Ended(cell.state())) {
      done += TokensToTrain(cell);  // nothing left to train
      continue;
    }
    if (cell.state() == v1::CELL_STATE_RUNNING) throughput += cell.tokens_per_second();
    done += TokensTrained(cell);
  }
  if (total == 0) return "";
  std::string line = absl::StrCat("tokens ", FormatTokens(done), "/", FormatTokens(total), " (",
                                  done * 100 / total, "%)");
  if (throughput > 0) {
    absl::StrAppend(&line, ", ", FormatTokens(static_cast<int64_t>(throughput)), " tok/s");
    if (done < total) {
      absl::StrAppend(&line, ", ETA ",
                      FormatDuration(static_cast<double>(total - done) / throughput));
    }
  }
  return line;
}

std::string RenderStudy(const v1::GetStudyResponse& study, const Style& style) {
  const std::vector<std::string> extra = ExtraAxes(study.cells());
  // Devices per attempt are shown once some cell needs more than one.
  const bool devices = std::any_of(study.cells().begin(), study.cells().end(),
                                   [](const v1::Cell& c) { return c.devices() > 1; });
  std::vector<std::string> headers = {"CELL", "STATE"};
  Append(&headers, AxisHeaders(extra));
  const size_t first_number = headers.size();
  if (devices) headers.push_back("DEVICES");
  Append(&headers, {"PROGRESS", "LOSS", "TOK/S", "ATTEMPTS"});
  // WSD trunk sharing: which rows are trunks, and where each branch starts.
  const bool shared = AnyShared(study.cells());
  if (shared) headers.push_back("RUNS AS");
  headers.push_back("LAST ERROR");
  Table table(headers);
  for (size_t c = first_number; c < headers.size() - (shared ? 2 : 1); ++c) table.AlignRight(c);
  for (const v1::Cell& cell : study.cells()) {
    std::string progress =
        absl::StrCat(FormatTokens(cell.tokens_done()), "/", FormatTokens(cell.tokens_budget()));
    if (cell.tokens_budget() > 0) {
      int64_t percent = std::min<int64_t>(100, cell.tokens_done() * 100 / cell.tokens_budget());
      absl::StrAppend(&progress, " ", percent, "%");
    }
    std::vector<std::string> row = {cell.id(), style.State(cell.state())};
    Append(&row, AxisCells(cell, extra));
    if (devices) row.push_back(std::to_string(std::max(1, cell.devices())));
    Append(&row, {progress, cell.has_latest_loss() ? FormatValue(cell.latest_loss()) : "-",
                  cell.tokens_per_second() > 0
                      ? FormatTokens(static_cast<int64_t>(cell.tokens_per_second()))
                      : "-",
                  std::to_string(cell.attempts())});
    if (shared) row.push_back(RoleText(cell));
    row.push_back(Truncate(cell.last_error(), kErrorChars));
    table.AddRow(std::move(row));
  }
  const std::string progress = StudyProgress(study);
  std::string words;
  if (!study.study().description().empty()) {
    absl::StrAppend(&words, "description: ", study.study().description(), "\n");
  }
  if (study.study().tags_size() > 0) {
    absl::StrAppend(&words, "tags: ", absl::StrJoin(study.study().tags(), ", "), "\n");
  }
  return StudySummary(study.study(), style) + "\n" + words +
         (progress.empty() ? "" : progress + "\n") + table.Render();
}

std::string RenderSubmitPreview(const v1::SubmitStudyResponse& preview) {
  const std::set<std::string> fresh(preview.new_cell_ids().begin(), preview.new_cell_ids().end());
  const std::vector<std::string> extra = ExtraAxes(preview.cells());
  std::vector<std::string> headers = {"CELL", "SUBMIT"};
  Append(&headers, AxisHeaders(extra));
  const bool shared = AnyShared(preview.cells());
  if (shared) headers.push_back("RUNS AS");
  Table table(headers);
  int trunks = 0;
  for (const v1::Cell& cell : preview.cells()) {
    std::vector<std::string> row = {
        cell.id(), fresh.count(cell.id())
                       ? "new"
                       : "exists (" + std::string(wire::StateName(cell.state())) + ")"};
    Append(&row, AxisCells(cell, extra));
    if (shared) row.push_back(RoleText(cell));
    table.AddRow(std::move(row));
    if (wire::RoleOf(cell) == wire::CellRole::kTrunk) ++trunks;
  }
  const int total = preview.cells_size() - trunks;
  return table.Render() +
         absl::StrCat(
             preview.study().name(), ": ", total, total == 1 ? " cell" : " cells",
             trunks > 0 ? absl::StrCat(" and ", trunks, trunks == 1 ? " trunk" : " trunks") : "",
             ", ", fresh.size(), " new; dry run, nothing written\n") +
         SharingSummary(preview);
}

std::vector<std::string> ResultColumns(const v1::GetResultsResponse& results) {
  std::set<std::string> names;
  for (const v1::CellResult& r : results.results()) {
    for (const auto& [name, value] : r.final_metrics()) {
      if (IsResultColumn(name)) names.insert(name);
    }
  }
  std::vector<std::string> columns(names.begin(), names.end());
  std::sort(columns.begin(), columns.end(),
            [](const std::string& a, const std::string& b) { return ColumnKey(a) < ColumnKey(b); });
  return columns;
}

std::string RenderResults(const v1::GetResultsResponse& results) {
  const std::vector<std::string> metrics = ResultColumns(results);
  google::protobuf::RepeatedPtrField<v1::Cell> cells;
  for (const v1::CellResult& r : results.results()) *cells.Add() = r.cell();
  const std::vector<std::string> extra = ExtraAxes(cells);
  std::vector<std::string> headers = {"CELL"};
  Append(&headers, AxisHeaders(extra));
  headers.push_back("STATE");
  const size_t first_number = headers.size();
  const bool sized =
      std::any_of(results.results().begin(), results.results().end(),
                  [](const v1::CellResult& r) { return r.cell().non_embedding_params() > 0; });
  if (sized) Append(&headers, {"PARAMS", "FLOPS/TOK"});
  Append(&headers, metrics);
  Table table(headers);
  for (size_t c = first_number; c < headers.size(); ++c) table.AlignRight(c);
  for (const v1::CellResult& r : results.results()) {
    const v1::Cell& cell = r.cell();
    std::vector<std::string> row = {cell.id()};
    Append(&row, AxisCells(cell, extra));
    row.push_back(std::string(wire::StateName(cell.state())));
    if (sized) {
      row.push_back(cell.non_embedding_params() > 0 ? FormatTokens(cell.non_embedding_params())
                                                    : "-");
      row.push_back(cell.train_flops_per_token() > 0
                        ? FormatTokens(std::llround(cell.train_flops_per_token()))
                        : "-");
    }
    for (const std::string& m : metrics) {
      auto it = r.final_metrics().find(m);
      row.push_back(it == r.final_metrics().end() ? "-" : FormatValue(it->second));
    }
    table.AddRow(std::move(row));
  }
  return table.Render();
}

std::string ProgressLine(const v1::GetStudyResponse& study) {
  std::string line = StudySummary(study.study());
  for (const v1::Cell& cell : study.cells()) {
    if (cell.state() != v1::CELL_STATE_RUNNING) continue;
    absl::StrAppend(&line, " | ", cell.id().substr(0, 8), " ", FormatTokens(cell.tokens_done()),
                    "/", FormatTokens(cell.tokens_budget()));
    if (cell.has_latest_loss()) absl::StrAppend(&line, " loss ", FormatValue(cell.latest_loss()));
  }
  return line;
}

}  // namespace onset::cli
