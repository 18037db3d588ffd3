// Deterministic random numbers for data generation: a splitmix64 generator with hand-written
// samplers (std:: distributions differ between standard libraries), so the same seeds give the
// same tokens on every machine, and the stream tags that keep the data streams apart.
#pragma once

#include <cstdint>

namespace onset::model {

// splitmix64: small, fast, and good enough for data generation.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();          // [0, 1)
  int64_t Below(int64_t n);  // [0, n), n > 0
  double Gaussian();         // standard normal
  int Poisson(double mean);  // mean >= 0

 private:
  uint64_t state_;
};

// Combines seeds and stream tags into a new seed (order matters).
uint64_t MixSeed(uint64_t a, uint64_t b);

// Stream tags: the same data.seed / train.seed never produce overlapping streams.
inline constexpr uint64_t kChainStream = 0x636861696eULL;   // the background chain
inline constexpr uint64_t kTrainStream = 0x747261696eULL;   // training sequences
inline constexpr uint64_t kHeldoutStream = 0x68656c64ULL;   // held-out sequences
inline constexpr uint64_t kNiahStream = 0x6e696168ULL;      // NIAH samples
inline constexpr uint64_t kAblationStream = 0x61626c74ULL;  // random heads of the ablation
inline constexpr uint64_t kKeySwapStream = 0x6b657973ULL;   // the key-swap control's keys

}  // namespace onset::model
