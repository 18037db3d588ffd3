// Study files the coordinator's tests share. No store, no gRPC: the study's own tests use them.
#pragma once

namespace onset::coordinator::testing {

// A small valid study: 2 archs x 2 windows x 2 seeds, where `full` ignores the window:
// full: 2 cells, swa: 4 cells.
inline constexpr const char* kSmallStudy = R"yaml(name: small
model:
  layers: 4
  d_model: 32
  heads: 2
  seq_len: 64
train:
  tokens: 64K
  batch_tokens: 512
grid:
  arch: [full, swa]
  window: [16, 32]
  seeds: 2
)yaml";

}  // namespace onset::coordinator::testing
