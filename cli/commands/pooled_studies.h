// Several studies read as one (`onset compare S1 S2 ...`): a follow-up study (more seeds, another
// window) compared together with the first. Their cells and curves are pooled and grouped by
// axes as one study's are; a cell's id hashes its study's name too, so the same grid point
// submitted in two studies is two cells that trained the same model on the same data: cells
// whose configs differ only in their study are one experiment and count once (the first
// study's, in the order given), with a note saying which was used and a warning when their
// results differ.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/client/study_client.h"

namespace onset::cli {

struct PooledStudies {
  v1::GetStudyResponse study;      // every kept cell (each with its own study), trunks removed
  StudyClient::Curves curves;      // of `metrics`, per kept cell
  std::vector<std::string> notes;  // duplicates counted once, results that differ
};

// Reads `names` (in order; each at most once) and their curves of `metrics`; the first metric
// is the one whose final values are compared between duplicates. Errors as the client's (an
// unknown study: NotFound naming it).
absl::StatusOr<PooledStudies> PoolStudies(StudyClient& client,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::string>& metrics);

// A cell's config without its study's name: equal for the same experiment in two studies.
std::string ConfigWithoutStudy(const std::string& config_json);

}  // namespace onset::cli
