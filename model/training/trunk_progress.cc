#include "model/training/trunk_progress.h"

#include <functional>
#include <string_view>

#include "model/config/wsd_trunk.h"
#include "model/training/metrics_writer.h"

namespace onset::model {
namespace {

// Calls `f` with each line of `reported` that holds an event, and the event.
void ForEachEvent(const std::string& reported,
                  const std::function<void(std::string_view, const MetricsEvent&)>& f) {
  const std::string_view text = reported;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (const std::optional<MetricsEvent> e = MetricsEvent::Parse(line)) f(line, *e);
  }
}

}  // namespace

std::set<int64_t> ReportedEvals(const std::string& reported) {
  std::set<int64_t> tokens;
  ForEachEvent(reported, [&](std::string_view, const MetricsEvent& e) {
    if (e.event == trainer::kEventEval) tokens.insert(e.tokens);
  });
  return tokens;
}

std::optional<std::string> BranchRefusal(const std::string& path, const CellConfig& cell) {
  if (cell.train.schedule == "wsd") return std::nullopt;
  return path + ": only a wsd cell branches from a trunk; this cell's train.schedule is " +
         cell.train.schedule;
}

std::optional<std::string> AdoptTrunkProgress(const std::string& path, const CellConfig& cell,
                                              TrainProgress* progress) {
  if (auto refusal = BranchRefusal(path, cell)) return refusal;
  const int64_t tokens = progress->tokens;
  const int64_t step = TokensPerStep(cell);
  const int64_t decay_start = cell.train.wsd_decay_start();
  if (tokens <= 0 || tokens % step != 0) {
    return path + ": at " + std::to_string(tokens) +
           " tokens, not a step boundary (a multiple of " + std::to_string(step) + ")";
  }
  if (tokens > decay_start) {
    return path + ": at " + std::to_string(tokens) + " tokens, past this cell's decay start at " +
           std::to_string(decay_start) + " tokens (its branch point is " +
           std::to_string(BranchPoint(cell)) + ")";
  }
  const std::optional<std::vector<int64_t>> ends = EvalStepEnds(cell, tokens);
  if (!ends) return path + ": this cell evaluates at too many points to branch";
  const std::set<int64_t> own(ends->begin(), ends->end());

  std::string kept;
  ForEachEvent(progress->reported, [&](std::string_view line, const MetricsEvent& e) {
    if (e.event == trainer::kEventTrain ||
        (e.event == trainer::kEventEval && own.count(e.tokens) > 0)) {
      kept.append(line);
      kept += '\n';
    }
  });
  const std::set<int64_t> evaluated = ReportedEvals(kept);
  for (int64_t at : own) {
    if (evaluated.count(at) == 0) {
      return path + " has no eval at " + std::to_string(at) +
             " tokens, which this cell evaluates at";
    }
  }
  progress->reported = std::move(kept);
  return std::nullopt;
}

std::optional<std::string> TrunkResumeRefusal(const std::string& path,
                                              const std::vector<int64_t>& eval_at,
                                              const TrainProgress& progress) {
  const std::set<int64_t> evaluated = ReportedEvals(progress.reported);
  for (int64_t at : eval_at) {
    if (at > progress.tokens) break;
    if (evaluated.count(at) == 0) {
      return path + ": has no eval at " + std::to_string(at) +
             " tokens, which the trunk evaluates at";
    }
  }
  return std::nullopt;
}

}  // namespace onset::model
