// `onset export`: every point of a study's cells, one row each, as CSV or JSON lines.
#pragma once

#include <ostream>
#include <string>

#include "analysis/study_compare.h"
#include "onset/v1/onset.pb.h"

namespace onset::cli {

enum class ExportFormat { kCsv, kJsonLines };

// Writes a row per point of `curves` for each cell of `study` (in its order): study (the
// cell's; `study_name` for a cell that names none), cell_id,
// state, the cell's axes (CSV: a column "axis.NAME" per axis any cell has, so that the tokens
// axis, the budget, is not taken for a point's tokens; JSON: an "axes" object), metric, tokens
// value (not finite: empty in CSV, null in JSON) and at_unix_ms, when the point was measured in
// milliseconds since the Unix epoch (from `times`, which holds one per point; not known, as for
// points stored before onset recorded it or when `times` is null: empty in CSV, null in JSON).
// CSV fields are quoted as RFC 4180 says; values keep 17 significant digits.
void WriteExport(const std::string& study_name, const v1::GetStudyResponse& study,
                 const analysis::Curves& curves, const analysis::CurveTimes* times,
                 ExportFormat format, std::ostream& out);

}  // namespace onset::cli
