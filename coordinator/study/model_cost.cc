#include "coordinator/study/model_cost.h"

#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "model/config/cell_config.h"
#include "model/config/flops.h"

namespace onset::coordinator {
namespace {

// Bytes of config text remembered at most (some 30,000 typical configs); past it the memo
// starts over: a bound on memory, not a working-set size.
constexpr size_t kMemoBytes = size_t{32} << 20;

ModelCost Compute(const std::string& config_json) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  model::CellConfig config;
  if (j.is_discarded() || model::ParseCellConfig(j, &config)) return {};
  const int64_t params = model::NonEmbeddingParams(config.model);
  return {params, model::TrainFlopsPerToken(config.model, params)};
}

}  // namespace

ModelCost ModelCostOf(const std::string& config_json) {
  static std::mutex mu;
  static auto* memo = new std::unordered_map<std::string, ModelCost>();
  static size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memo->find(config_json); it != memo->end()) return it->second;
  }
  const ModelCost cost = Compute(config_json);
  std::lock_guard<std::mutex> lock(mu);
  if (bytes + config_json.size() > kMemoBytes) {
    memo->clear();
    bytes = 0;
  }
  if (memo->emplace(config_json, cost).second) bytes += config_json.size();
  return cost;
}

int64_t MaxPointTokens(const std::string& config_json, int64_t budget) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  // A trunk's spec holds the config of the cell it serves.
  const nlohmann::json& cell =
      j.is_object() && j.contains("trunk") && j.contains("cell") ? j["cell"] : j;
  model::CellConfig config;
  if (cell.is_discarded() || !cell.is_object() || model::ParseCellConfig(cell, &config)) {
    return budget + std::max<int64_t>(budget / 10, int64_t{1} << 20);
  }
  return budget + std::max<int64_t>(config.train.batch_tokens, 0) +
         config.eval.resolved_every_tokens(config.train.tokens);
}

}  // namespace onset::coordinator
