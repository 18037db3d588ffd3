// How the CLI shows WSD trunk sharing (docs/wsd-trunks.md): the tokens each row of a study
// actually trains, what a branch runs from, and the saving a submission plans. Pure functions of
// the API's messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onset/v1/onset.pb.h"

namespace onset::cli {

// The tokens a row trains: a trunk to its end, a branch from its branch point to its budget,
// any other cell its budget.
int64_t TokensToTrain(const v1::Cell& cell);
// How many of those it has trained (tokens_done counted from the branch point for a branch),
// at most TokensToTrain.
int64_t TokensTrained(const v1::Cell& cell);
// Removes the trunks from `study`'s cells: they are jobs, not grid points, and have no curves of
// their own (each branch reports its trunk's points as its own). For compare, plot, fit, export.
void RemoveTrunks(v1::GetStudyResponse* study);
// "8 cells" or "8 cells and 2 trunks": the grid's cells, and the trunks apart.
std::string CountCells(const google::protobuf::RepeatedPtrField<v1::Cell>& cells);
// Whether any cell of the list is a trunk or a branch.
bool AnyShared(const google::protobuf::RepeatedPtrField<v1::Cell>& cells);
// "trunk", "branch of 1a2b3c4d at 800K", with " (waiting for it)" while the checkpoint it
// starts from is not written; "" for a cell that runs on its own.
std::string RoleText(const v1::Cell& cell);
// What `onset rerun --fresh` discards of the trunks and branches among `named` (cell ids or
// prefixes of them), one line each: a trunk loses its checkpoints and metrics, and its branches
// that have not started wait for it to train again (those that have keep their own
// checkpoints); a branch re-runs only its decay, from its trunk's checkpoint. Empty when none
// is a trunk or a branch.
std::string DescribeFreshRerun(const v1::GetStudyResponse& study,
                               const std::vector<std::string>& named);
// "9.4M tokens to train (15M without trunk sharing, 1.6x less)", or "15M tokens to train" when
// nothing is shared; then one "note: ..." line per sharing note. Each line ends in '\n'. Empty
// from a coordinator that does not plan trunks.
std::string SharingSummary(const v1::SubmitStudyResponse& response);

}  // namespace onset::cli
