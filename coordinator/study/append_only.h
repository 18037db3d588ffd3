// Studies are append-only. Submitting a study again (an edited file under the same name) adds
// the cells that are new and keeps every stored one; it never changes what a stored cell
// means. A cell stands for one grid point, named by its display axes (CellSpec::axes: the five
// named axes and every field the grid varies). A submitted cell that lands on the grid point
// of a stored cell of the study with a different config (e.g. the file changed train.lr
// without making it an axis) would silently be a second, different cell for the same point:
// it is refused, and nothing of the submission is written.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/study/grid.h"

namespace onset::coordinator {

// A field whose value differs between two configs; values as shown ("0.003", "swa", "(unset)").
struct FieldChange {
  std::string path;  // "train.lr"
  std::string before;
  std::string after;
};

// The fields that differ between two canonical cell configs (JSON text), in path order.
std::vector<FieldChange> DiffConfigs(const std::string& before_json, const std::string& after_json);

// "arch=swa window=16 pos=rope tokens=1000000 seed=0 train.lr=0.001": the named axes first.
std::string DescribeGridPoint(const std::map<std::string, std::string>& axes);

// OK, or FailedPrecondition for the first submitted cell that is not stored but has the grid
// point of a stored one, e.g. "cell arch=swa window=16 pos=rope tokens=1000000 seed=0 exists
// with train.lr = 0.003; this file gives 0.001: add train.lr as an axis or use a new study
// name".
absl::Status CheckAppendOnly(const std::vector<CellSpec>& stored,
                             const std::vector<CellSpec>& submitted);

}  // namespace onset::coordinator
