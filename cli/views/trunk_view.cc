#include "cli/views/trunk_view.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "cli/views/render.h"
#include "proto/cell_names.h"

namespace onset::cli {
namespace {

bool IsTrunk(const v1::Cell& cell) { return wire::RoleOf(cell) == wire::CellRole::kTrunk; }
bool IsBranch(const v1::Cell& cell) { return wire::RoleOf(cell) == wire::CellRole::kBranch; }

}  // namespace

int64_t TokensToTrain(const v1::Cell& cell) {
  if (IsBranch(cell)) return std::max<int64_t>(0, cell.tokens_budget() - cell.branch_tokens());
  return cell.tokens_budget();
}

int64_t TokensTrained(const v1::Cell& cell) {
  const int64_t done =
      IsBranch(cell) ? cell.tokens_done() - cell.branch_tokens() : cell.tokens_done();
  return std::clamp<int64_t>(done, 0, TokensToTrain(cell));
}

void RemoveTrunks(v1::GetStudyResponse* study) {
  google::protobuf::RepeatedPtrField<v1::Cell>* cells = study->mutable_cells();
  cells->erase(std::remove_if(cells->begin(), cells->end(), IsTrunk), cells->end());
}

std::string CountCells(const google::protobuf::RepeatedPtrField<v1::Cell>& cells) {
  const auto trunks = std::count_if(cells.begin(), cells.end(), IsTrunk);
  const auto grid = cells.size() - trunks;
  std::string out = absl::StrCat(grid, grid == 1 ? " cell" : " cells");
  if (trunks > 0) absl::StrAppend(&out, " and ", trunks, trunks == 1 ? " trunk" : " trunks");
  return out;
}

bool AnyShared(const google::protobuf::RepeatedPtrField<v1::Cell>& cells) {
  return std::any_of(cells.begin(), cells.end(),
                     [](const v1::Cell& c) { return IsTrunk(c) || IsBranch(c); });
}

std::string RoleText(const v1::Cell& cell) {
  if (IsTrunk(cell)) return "trunk";
  if (!IsBranch(cell)) return "";
  std::string text = absl::StrCat("branch of ", cell.trunk_id().substr(0, 8), " at ",
                                  FormatTokens(cell.branch_tokens()));
  if (cell.waiting_for_trunk()) text += " (waiting for it)";
  return text;
}

std::string DescribeFreshRerun(const v1::GetStudyResponse& study,
                               const std::vector<std::string>& named) {
  auto is_named = [&named](const std::string& id) {
    return std::any_of(named.begin(), named.end(), [&id](const std::string& n) {
      return !n.empty() && id.compare(0, n.size(), n) == 0;
    });
  };
  std::string out;
  for (const v1::Cell& cell : study.cells()) {
    if (!is_named(cell.id())) continue;
    if (IsTrunk(cell)) {
      int waiting = 0, started = 0;
      for (const v1::Cell& b : study.cells()) {
        if (!IsBranch(b) || b.trunk_id() != cell.id()) continue;
        const bool ended =
            b.state() == v1::CELL_STATE_SUCCEEDED || b.state() == v1::CELL_STATE_DIVERGED;
        if (ended || b.tokens_done() > b.branch_tokens()) {
          ++started;
        } else {
          ++waiting;
        }
      }
      absl::StrAppend(&out, "trunk ", cell.id().substr(0, 8),
                      ": its checkpoints and metrics are discarded and it trains again from "
                      "scratch; ",
                      waiting, waiting == 1 ? " branch" : " branches",
                      " not started yet will wait for it; ", started,
                      started == 1 ? " branch" : " branches",
                      " already past its branch point keep what they have\n");
    } else if (IsBranch(cell)) {
      absl::StrAppend(&out, "branch ", cell.id().substr(0, 8),
                      ": re-runs only its decay, from trunk ", cell.trunk_id().substr(0, 8),
                      "'s checkpoint at ", FormatTokens(cell.branch_tokens()), " tokens\n");
    }
  }
  return out;
}

std::string SharingSummary(const v1::SubmitStudyResponse& response) {
  const int64_t with = response.tokens_to_train();
  const int64_t without = response.tokens_without_sharing();
  if (without == 0 && response.sharing_notes().empty()) return "";  // an older coordinator
  std::string out = FormatTokens(with) + " tokens to train";
  if (with > 0 && with < without) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1fx", static_cast<double>(without) / with);
    absl::StrAppend(&out, " (", FormatTokens(without), " without trunk sharing, ", ratio, " less)");
  }
  out += "\n";
  for (const std::string& note : response.sharing_notes())
    absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

}  // namespace onset::cli
