#include "model/data/rng.h"

#include <algorithm>
#include <cmath>

namespace onset::model {

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

int64_t Rng::Below(int64_t n) { return static_cast<int64_t>(Uniform() * static_cast<double>(n)); }

double Rng::Gaussian() {
  double u1 = 1.0 - Uniform();  // (0, 1]
  double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

int Rng::Poisson(double mean) {
  if (mean <= 0) return 0;
  if (mean > 30) {  // normal approximation; Knuth's product underflows for large means
    return std::max(0, static_cast<int>(std::lround(mean + std::sqrt(mean) * Gaussian())));
  }
  double limit = std::exp(-mean), p = 1.0;
  int k = -1;
  do {
    ++k;
    p *= Uniform();
  } while (p > limit);
  return k;
}

uint64_t MixSeed(uint64_t a, uint64_t b) {
  Rng r(a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL));
  r.Next();
  return r.Next();
}

}  // namespace onset::model
