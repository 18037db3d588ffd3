// The studies the simulator and its scenarios submit: tiny models of the scripted trainer
// (scripted_trainer.cc), a step of kStepTokens tokens, a checkpoint every 4 steps.
#pragma once

#include <cstdint>
#include <string>

namespace onset::sim {

inline constexpr int64_t kStepTokens = 1024;

// A study of `cells` cells (seeds of one tiny model of width `d_model`) of `steps` steps each.
// The scripted trainer reads train.tokens, batch_tokens, model.seq_len and
// checkpoint_every_tokens; onsetd checks the rest as for any study. Studies of different widths
// have cells of different ids (an id is its config's hash, whatever the study).
std::string StudyFile(const std::string& name, int cells, int steps, int d_model = 32);

// A WSD study (docs/wsd-trunks.md) of three budgets, 16, 32 and 48 steps, with one warmup and a
// 25% decay: one trunk, three branches.
std::string WsdStudyFile(const std::string& name);

}  // namespace onset::sim
