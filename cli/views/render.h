// What `onset status`, `onset results` and `onset run` print, laid out with cli/views/table.h.
// Pure functions of the API's messages: no gRPC, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/views/style.h"
#include "cli/views/table.h"
#include "onset/v1/onset.pb.h"

namespace onset::cli {

// The display axes of `cells` besides arch, window, pos, tokens and seed (fields the study
// varies, by dotted path, e.g. "train.lr"), sorted: extra columns of the cell tables.
std::vector<std::string> ExtraAxes(const google::protobuf::RepeatedPtrField<v1::Cell>& cells);

// `onset status`: one row per study with its cell counts by state.
std::string RenderStudyList(const v1::ListStudiesResponse& studies);
// One row per worker: id, host, the Slurm job it runs in ("-" when none), devices, its jobs
// (study/cell#attempt and their devices), and how long ago it was last heard from at
// `now_unix_ms` (", exited" for one that said it exits); then how many workers the list leaves
// out for room, and how many because they are not live (ListWorkersResponse::not_live).
std::string RenderWorkers(const v1::ListWorkersResponse& workers, int64_t now_unix_ms);
// `onset status STUDY`: a summary line, then one row per cell.
std::string RenderStudy(const v1::GetStudyResponse& study, const Style& style = Style());
// "tokens 3.2M/8M (40%), 52.1K tok/s, ETA 1m32s": tokens done over the cells' budgets (ended
// cells count as done), the running cells' summed throughput, and the time the remaining
// tokens take at it. Empty for a study without cells.
std::string StudyProgress(const v1::GetStudyResponse& study);
// "cuda:0,1,3" for cuda:0, cuda:1, cuda:3: a device list with each kind named once.
std::string FormatDevices(const google::protobuf::RepeatedPtrField<std::string>& devices);
// "demo: 4 cells: 1 succeeded, 1 running, 2 queued".
std::string StudySummary(const v1::Study& study, const Style& style = Style());
// `onset submit --dry-run FILE`: one row per cell of the file, "new" or "exists (STATE)" and
// its axes, then the counts.
std::string RenderSubmitPreview(const v1::SubmitStudyResponse& preview);
// `onset results STUDY`: one row per cell, its axes, state, its model's non-embedding
// parameters and training FLOPs per token (columns PARAMS, FLOPS/TOK, left out when no cell
// has them: an older coordinator), and final metrics as columns.
std::string RenderResults(const v1::GetResultsResponse& results);
// The metric columns of RenderResults, in display order: train/loss, eval/heldout_loss,
// eval/short_loss, other eval/ metrics, niah/acc, niah/acc@L by increasing L, other niah/.
std::vector<std::string> ResultColumns(const v1::GetResultsResponse& results);
// One line of `onset run`'s live progress: counts by state and each running cell's progress.
std::string ProgressLine(const v1::GetStudyResponse& study);

}  // namespace onset::cli
