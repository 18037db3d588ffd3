// What the CPU kernels of model/nn/ share to vectorise their loops: a per-CPU build of a hot
// function and an exp the compiler vectorises. Their loops are `#pragma omp simd` loops
// (-fopenmp-simd, no OpenMP runtime).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

// A function built twice on x86-64 with GCC, for AVX2 (8 floats a vector) and for the baseline
// (SSE2, 4), the loader picking one per CPU; elsewhere built once.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONSET_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ONSET_SIMD_CLONES
#endif

namespace onset::model {

// exp(x) for x <= 88 in a form the compiler vectorises: 2^n * exp(r) with n = round(x / ln 2),
// r = x - n ln 2 split in two constants (Cody and Waite), |r| <= ln 2 / 2, exp(r) by Cephes'
// degree-6 polynomial: relative error below 2e-7. Below -87 it returns about 1e-38 * exp(r)
// instead of the true value (smaller than anything the callers keep). The clamp vectorises only
// without -ftrapping-math (GCC keeps a comparison's exception flags otherwise): files that call
// it are built with -fno-trapping-math.
inline float FastExp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  constexpr float kLog2e = 1.44269504088896341f, kRound = 12582912.0f;  // 1.5 * 2^23
  const float shifted = x * kLog2e + kRound;  // n in the low mantissa bits, rounded to nearest
  const float n = shifted - kRound;
  const float r = x - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  const int32_t scale_bits = (bits - 0x4B400000 + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return y * scale;
}

}  // namespace onset::model
