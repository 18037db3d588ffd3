#include "cli/views/watch_view.h"

#include <ctime>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/views/render.h"
#include "proto/cell_names.h"

namespace onset::cli {
namespace {

constexpr const char* kNamedAxes[] = {"arch", "window", "pos", "tokens", "seed"};

// "14:03:07", local time.
std::string ClockTime(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string DescribeAxes(const google::protobuf::Map<std::string, std::string>& axes) {
  std::vector<std::string> parts;
  for (const char* name : kNamedAxes) {
    auto it = axes.find(name);
    if (it == axes.end()) continue;
    const bool tokens = std::string(name) == "tokens";
    parts.push_back(absl::StrCat(
        name, "=", tokens ? FormatTokens(std::atoll(it->second.c_str())) : it->second));
  }
  std::map<std::string, std::string> extra;
  for (const auto& [k, v] : axes) {
    if (std::find(std::begin(kNamedAxes), std::end(kNamedAxes), k) == std::end(kNamedAxes)) {
      extra[k] = v;
    }
  }
  for (const auto& [k, v] : extra) parts.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(parts, " ");
}

std::string WatchView::Apply(const v1::WatchStudyResponse& message, int64_t now_unix_ms) {
  std::string out;
  if (message.has_snapshot()) {
    // A snapshot may come in several messages: the first replaces what was known, the others
    // add their cells; the summary is printed once it is complete.
    if (!snapshot_pending_) {
      study_.Clear();
      index_.clear();
    }
    *study_.mutable_study() = message.snapshot().study();
    for (const v1::Cell& cell : message.snapshot().cells()) {
      index_[cell.id()] = study_.cells_size();
      *study_.add_cells() = cell;
    }
    snapshot_pending_ = message.snapshot_more();
    if (!snapshot_pending_) out += StudySummary(study_.study(), style_) + "\n";
  }
  if (message.last_seq() > last_seq_) last_seq_ = message.last_seq();
  for (const v1::CellEvent& e : message.events()) {
    auto it = index_.find(e.cell_id());
    if (it == index_.end()) {
      // A cell added since the snapshot (the study file was extended).
      v1::Cell* cell = study_.add_cells();
      cell->set_id(e.cell_id());
      *cell->mutable_axes() = e.axes();
      it = index_.emplace(e.cell_id(), study_.cells_size() - 1).first;
    }
    v1::Cell* cell = study_.mutable_cells(it->second);
    cell->set_state(e.to());
    std::string line = absl::StrCat(ClockTime(e.at_unix_ms()), "  ", e.cell_id(), "  ",
                                    DescribeAxes(e.axes()), "  ");
    if (e.from() == v1::CELL_STATE_UNSPECIFIED) {
      absl::StrAppend(&line, "added (", style_.State(e.to()), ")");
    } else {
      absl::StrAppend(&line, std::string(wire::StateName(e.from())), " -> ", style_.State(e.to()));
    }
    if (e.to() == v1::CELL_STATE_RUNNING) {
      absl::StrAppend(&line,
                      style_.Dim(absl::StrCat("  attempt ", e.attempt(), " on ", e.worker_id())));
    } else if (!e.reason().empty() && e.to() != v1::CELL_STATE_SUCCEEDED) {
      absl::StrAppend(&line, ": ", Truncate(e.reason(), 160));
    }
    out += line + "\n";
  }
  for (const v1::CellProgress& p : message.progress()) {
    auto it = index_.find(p.cell_id());
    if (it == index_.end()) continue;
    v1::Cell* cell = study_.mutable_cells(it->second);
    cell->set_tokens_done(p.tokens_done());
    cell->set_tokens_budget(p.tokens_budget());
    cell->set_tokens_per_second(p.tokens_per_second());
    if (p.has_latest_loss()) cell->set_latest_loss(p.latest_loss());
  }
  if (message.has_study()) {
    const bool new_alert =
        message.study().alert() != study_.study().alert() && !message.study().alert().empty();
    *study_.mutable_study() = message.study();
    if (new_alert) out += style_.Alert("!! " + message.study().alert()) + "\n";
  }
  // The progress line, when it changed and not more often than progress_every_ms_ (always
  // with the snapshot, and when the study has just finished).
  const std::string progress = ProgressLine();
  if (progress_every_ms_ > 0 && !progress.empty() && progress != progress_printed_ &&
      ((message.has_snapshot() && !snapshot_pending_) || Finished() ||
       now_unix_ms - progress_printed_at_ms_ >= progress_every_ms_)) {
    out += style_.Dim(progress) + "\n";
    progress_printed_ = progress;
    progress_printed_at_ms_ = now_unix_ms;
  }
  return out;
}

std::string WatchView::ProgressLine() const {
  const std::string progress = StudyProgress(study_);
  if (progress.empty()) return "";
  int running = 0;
  for (const v1::Cell& c : study_.cells()) running += c.state() == v1::CELL_STATE_RUNNING;
  return absl::StrCat(running, " running, ", progress);
}

bool WatchView::Finished() const {
  if (study_.cells().empty() || snapshot_pending_) return false;
  for (const v1::Cell& c : study_.cells()) {
    if (!wire::Ended(c.state())) return false;
  }
  return true;
}

int WatchView::ExitCode() const {
  for (const v1::Cell& c : study_.cells()) {
    if (c.state() == v1::CELL_STATE_FAILED || c.state() == v1::CELL_STATE_CANCELLED) {
      return kExitCellsFailed;
    }
  }
  return kExitOk;
}

std::string WatchView::Summary() const {
  std::map<std::string, int> counts;
  for (const v1::Cell& c : study_.cells()) ++counts[std::string(wire::StateName(c.state()))];
  std::vector<std::string> parts;
  for (const auto& [state, n] : counts) parts.push_back(absl::StrCat(n, " ", state));
  return absl::StrCat(study_.study().name(), ": ", study_.cells_size(),
                      study_.cells_size() == 1 ? " cell" : " cells", ": ",
                      absl::StrJoin(parts, ", "));
}

}  // namespace onset::cli
