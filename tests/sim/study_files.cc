#include "tests/sim/study_files.h"

#include <string>

namespace onset::sim {

// A study of `cells` cells (seeds of one tiny model of width `d_model`) of `steps` steps each,
// with a checkpoint every 4 steps. The scripted trainer reads train.tokens, batch_tokens,
// model.seq_len and checkpoint_every_tokens; onsetd checks the rest as for any study. Studies of
// different widths have cells of different ids (an id is its config's hash, whatever the study).
std::string StudyFile(const std::string& name, int cells, int steps, int d_model) {
  return "name: " + name +
         "\n"
         "model: {layers: 2, d_model: " +
         std::to_string(d_model) +
         ", heads: 2, seq_len: 64}\n"
         "train: {batch_tokens: " +
         std::to_string(kStepTokens) + ", micro_batch: 16, log_every_steps: 1, " +
         "checkpoint_every_tokens: " + std::to_string(4 * kStepTokens) +
         "}\n"
         "eval: {every_tokens: " +
         std::to_string(steps * kStepTokens) +
         ", heldout_seqs: 2, niah_lengths: [64], niah_samples: 1}\n"
         "grid:\n  arch: [full]\n  tokens: [" +
         std::to_string(steps * kStepTokens) + "]\n  seeds: " + std::to_string(cells) + "\n";
}

// A WSD study (docs/wsd-trunks.md) of three budgets, 16, 32 and 48 steps, with one warmup and a
// 25% decay: one trunk trains to 36 steps, checkpointing at the branch points 12, 24 and 36, and
// each budget's cell is a branch that trains its decay from there.
std::string WsdStudyFile(const std::string& name) {
  const int64_t s = kStepTokens;
  return "name: " + name +
         "\n"
         "model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}\n"
         "train: {batch_tokens: " +
         std::to_string(s) + ", micro_batch: 16, log_every_steps: 1, checkpoint_every_tokens: " +
         std::to_string(4 * s) + ", schedule: wsd, warmup_tokens: " + std::to_string(4 * s) +
         ", decay_fraction: 0.25}\n"
         "eval: {every_tokens: " +
         std::to_string(16 * s) +
         ", heldout_seqs: 2, niah_lengths: [64], niah_samples: 1}\n"
         "grid:\n  arch: [full]\n  tokens: [" +
         std::to_string(16 * s) + ", " + std::to_string(32 * s) + ", " + std::to_string(48 * s) +
         "]\n  seeds: 1\n";
}

}  // namespace onset::sim
