// A cell as a TensorBoard run: its directory, its "cell" text and its hyperparameters, the same
// for `onset export --format tensorboard` and onsetd's live writer (`--tensorboard-dir`).
//
// The directory is GROUP/LEAF: GROUP names the cell's axes but its seed
// ("arch=swa,pos=rope,window=16"), LEAF its seed and id ("seed=1,id=0123456789abcdef"; the id
// alone when the study has no seed axis), so that TensorBoard's run selector lists the seeds of
// one variant together and a regex on GROUP selects a variant.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/tensorboard/event_file.h"

namespace onset::tensorboard {

struct CellRun {
  std::string study;
  std::string id;
  std::map<std::string, std::string> axes;
  std::string state;  // "running", "succeeded", ... (as `onset status` names states)
  int64_t tokens_done = 0;
  int64_t tokens_budget = 0;
  std::string config_json;  // the canonical config; empty when not known
};

// Relative run directory, as above. Characters other than ASCII letters, digits and
// . _ - + = , @ : become '_'; each part is at most 200 bytes.
std::string RunDirectory(const std::map<std::string, std::string>& axes, const std::string& id);

// The "cell" text (markdown): the study, the id, state and tokens, the axes as a table and the
// config as a code block.
std::string CellText(const CellRun& cell);

// The hparams dashboard's view of the cell: every axis (as text) and the study; the group is the
// study and GROUP, so the seeds of a variant are one group.
std::map<std::string, HParamValue> CellHParams(const CellRun& cell);
std::string CellGroup(const CellRun& cell);

}  // namespace onset::tensorboard
