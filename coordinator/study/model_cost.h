// The size and training cost of a stored cell's model, from its config: what the Cell message
// carries beside the axes (non_embedding_params, train_flops_per_token) for `onset results`,
// `onset compare --x flops` and the dashboard. Torch-free (model/config/flops.h).
#pragma once

#include <cstdint>
#include <string>

namespace onset::coordinator {

struct ModelCost {
  int64_t non_embedding_params = 0;  // model::NonEmbeddingParams
  double train_flops_per_token = 0;  // model::TrainFlopsPerToken
};

// The cost of the model of a cell config (canonical JSON text, cells.config_json); zeros when it
// does not parse or validate (model::ParseCellConfig). Memoised by the text, since a cell's
// config never changes: listing a study again costs a lookup per cell. Thread-safe.
ModelCost ModelCostOf(const std::string& config_json);

// The most tokens a metric point of an attempt at `config_json` (a cell's config, or a WSD trunk's
// spec) may claim: `budget` (the cell's tokens_budget, where its trainer stops) plus one optimizer
// step and one evaluation interval of its config, so that the last step's overshoot and the
// final evaluation fit; `budget` plus a tenth (at least 1M tokens) when the config does not
// parse. A point past it cannot be the attempt's and is refused.
int64_t MaxPointTokens(const std::string& config_json, int64_t budget);

}  // namespace onset::coordinator
