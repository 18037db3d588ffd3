// Sliding-window causal flash attention: forward and backward (see swa_attention.h).
//
// Forward (FlashAttention-2 order): one block per (query tile of kBq rows, head); the block
// walks only the key tiles its window reaches (swa_tiles.h), keeps a running max and sum per
// row (online softmax) and the output row in registers, and writes O and the row's log-sum-exp.
// Backward: one block per (key tile, key/value head); it keeps dK and dV of its kBk keys in
// registers, walks the query tiles that see them for every query head of the group, recomputes
// P from the stored log-sum-exp, and adds its share of dQ into an fp32 buffer (atomicAdd).
//
// Thread layout in both: 128 threads, 4 per row (the 4 lanes of a row are adjacent lanes of
// one warp), each owning a quarter of the head dimension. Tiles live in shared memory in the
// input dtype, padded by 8 elements per row against bank conflicts; all arithmetic is fp32.
//
// Warp collectives (the shuffles of RowSum / RowMax, __syncwarp) name the full warp, so every
// lane of the warp must reach each of them on every path: a warp holds 8 rows, and those rows
// differ in what they may see (a row past T sees nothing, a row of a windowed tile may see
// none of it while its neighbours do). So no collective sits under a per-row or per-lane
// condition: rows past T and fully masked rows compute on zeros and -inf like the others and
// are only kept from writing. The loops around the collectives run the same trip count in
// every thread of the block (the tile ranges, the head group and kBq depend only on blockIdx
// and the shape). DeltaKernel and CastKernel use no collective.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "kernels/swa_attention.h"
#include "kernels/swa_tiles.h"

namespace onset::kernels {
namespace {

constexpr int kBq = 32;  // query rows per tile
constexpr int kBk = 32;  // keys per tile
constexpr int kThreads = 128;
constexpr int kPerRow = 4;  // threads per row
constexpr int kPad = 8;     // elements of padding per shared row
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarp = 32;
// One thread per (row, part): the 4 lanes of a row sit in one warp (RowSum / RowMax reduce over
// lane offsets 1 and 2), and every warp is full, so kFullMask names exactly its 32 lanes.
static_assert(kPerRow == 4, "RowSum and RowMax reduce over 4 lanes (xor 1, 2)");
static_assert(kWarp % kPerRow == 0, "a row's lanes must not straddle two warps");
static_assert(kThreads % kWarp == 0, "every warp of the block is full");
static_assert(kThreads == kBq * kPerRow && kThreads == kBk * kPerRow,
              "one thread per (row, part) in both kernels");

__device__ __forceinline__ float ToF(float x) { return x; }
__device__ __forceinline__ float ToF(__half x) { return __half2float(x); }
__device__ __forceinline__ float ToF(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T FromF(float x);
template <>
__device__ __forceinline__ float FromF<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half FromF<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Sum and max over the 4 lanes of a row. Full-mask shuffles: the caller must reach them with all
// 32 lanes of the warp (see the top of this file), never from a per-row branch.
__device__ __forceinline__ float RowSum(float x) {
  x += __shfl_xor_sync(kFullMask, x, 1);
  x += __shfl_xor_sync(kFullMask, x, 2);
  return x;
}
__device__ __forceinline__ float RowMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(kFullMask, x, 1));
  x = fmaxf(x, __shfl_xor_sync(kFullMask, x, 2));
  return x;
}

// Copies rows [row0, row0 + rows) of a (T, D) matrix into a shared (rows, D + kPad) tile; rows
// past T read as zero.
template <typename T, int D>
__device__ void LoadTile(T* tile, const T* src, int64_t row0, int rows, int64_t n_rows) {
  for (int idx = threadIdx.x; idx < rows * D; idx += blockDim.x) {
    const int r = idx / D, c = idx % D;
    const int64_t row = row0 + r;
    tile[r * (D + kPad) + c] = row < n_rows ? src[row * D + c] : FromF<T>(0.f);
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    ForwardKernel(SwaShape s, const T* __restrict__ q, const T* __restrict__ k,
                  const T* __restrict__ v, T* __restrict__ out, float* __restrict__ lse) {
  constexpr int kSlice = D / kPerRow;
  constexpr int kKeysPerThread = kBk / kPerRow;
  extern __shared__ __align__(16) unsigned char smem[];
  T* sq = reinterpret_cast<T*>(smem);                           // (kBq, D + kPad)
  T* sk = sq + kBq * (D + kPad);                                // (kBk, D + kPad)
  T* sv = sk + kBk * (D + kPad);                                // (kBk, D + kPad)
  float* sp = reinterpret_cast<float*>(sv + kBk * (D + kPad));  // (kBq, kBk + 1)

  const int64_t q_tile = blockIdx.x;
  const int64_t bh = blockIdx.y;  // b * H + h
  const int64_t b = bh / s.H, h = bh % s.H, g = h / (s.H / s.G);
  const T* qh = q + bh * s.T * D;
  const T* kh = k + (b * s.G + g) * s.T * D;
  const T* vh = v + (b * s.G + g) * s.T * D;
  const int row = threadIdx.x / kPerRow, part = threadIdx.x % kPerRow;
  const int64_t q0 = q_tile * kBq;
  const int64_t i = q0 + row;

  LoadTile<T, D>(sq, qh, q0, kBq, s.T);
  float acc[kSlice];
#pragma unroll
  for (int t = 0; t < kSlice; ++t) acc[t] = 0.f;
  float m = -INFINITY, l = 0.f;

  const TileRange keys = KeyTilesFor(q_tile, kBq, kBk, s.T, s.window);
  for (int64_t kt = keys.first; kt < keys.last; ++kt) {
    const int64_t k0 = kt * kBk;
    __syncthreads();  // the previous tile is no longer read
    LoadTile<T, D>(sk, kh, k0, kBk, s.T);
    LoadTile<T, D>(sv, vh, k0, kBk, s.T);
    __syncthreads();

    float sc[kKeysPerThread];
    float tile_max = -INFINITY;
#pragma unroll
    for (int cc = 0; cc < kKeysPerThread; ++cc) {
      const int c = part * kKeysPerThread + cc;
      const int64_t j = k0 + c;
      float dot = 0.f;
#pragma unroll 8
      for (int d = 0; d < D; ++d)
        dot += ToF(sq[row * (D + kPad) + d]) * ToF(sk[c * (D + kPad) + d]);
      const bool valid = i < s.T && j < s.T && Attends(i, j, s.window);
      sc[cc] = valid ? dot * s.scale : -INFINITY;
      tile_max = fmaxf(tile_max, sc[cc]);
    }
    tile_max = RowMax(tile_max);  // every lane: the masked ones contribute -inf
    const float m_new = fmaxf(m, tile_max);
    // m_new is the same in the 4 lanes of a row but differs between the rows of a warp (past T,
    // or a tile wholly outside this row's window), so the branch below is per row and holds no
    // collective: the row sum is taken after it, by every lane.
    const bool sees = m_new != -INFINITY;
    float corr = 1.f, sum = 0.f;
    if (!sees) {
      // Nothing this row may see yet: the whole tile lies outside its window (or i >= T).
#pragma unroll
      for (int cc = 0; cc < kKeysPerThread; ++cc)
        sp[row * (kBk + 1) + part * kKeysPerThread + cc] = 0.f;
    } else {
      corr = m == -INFINITY ? 0.f : __expf(m - m_new);
#pragma unroll
      for (int cc = 0; cc < kKeysPerThread; ++cc) {
        const float p = sc[cc] == -INFINITY ? 0.f : __expf(sc[cc] - m_new);
        sp[row * (kBk + 1) + part * kKeysPerThread + cc] = p;
        sum += p;
      }
    }
    sum = RowSum(sum);  // every lane, after the branch; a row that sees nothing sums zeros
    if (sees) {
      l = l * corr + sum;
      m = m_new;
    }
    __syncwarp();  // every lane: the row's probabilities (written by its 4 lanes) are visible
#pragma unroll
    for (int t = 0; t < kSlice; ++t) {
      const int d = part * kSlice + t;
      float pv = 0.f;
#pragma unroll 8
      for (int c = 0; c < kBk; ++c) pv += sp[row * (kBk + 1) + c] * ToF(sv[c * (D + kPad) + d]);
      acc[t] = acc[t] * corr + pv;
    }
  }
  if (i < s.T) {
    const float inv = 1.f / l;  // l > 0: key i itself is always in the window
#pragma unroll
    for (int t = 0; t < kSlice; ++t)
      out[(bh * s.T + i) * D + part * kSlice + t] = FromF<T>(acc[t] * inv);
    if (part == 0) lse[bh * s.T + i] = m + __logf(l);
  }
}

// delta[row] = sum_d dout[row, d] * out[row, d]: the softmax backward's row term.
template <typename T, int D>
__global__ void DeltaKernel(int64_t rows, const T* __restrict__ out, const T* __restrict__ dout,
                            float* __restrict__ delta) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;  // no warp collective below: an early exit is safe here
  float sum = 0.f;
  for (int d = 0; d < D; ++d) sum += ToF(out[row * D + d]) * ToF(dout[row * D + d]);
  delta[row] = sum;
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    BackwardKernel(SwaShape s, const T* __restrict__ q, const T* __restrict__ k,
                   const T* __restrict__ v, const T* __restrict__ dout,
                   const float* __restrict__ lse, const float* __restrict__ delta,
                   float* __restrict__ dq_accum, T* __restrict__ dk, T* __restrict__ dv) {
  constexpr int kSlice = D / kPerRow;
  extern __shared__ __align__(16) unsigned char smem[];
  T* sk = reinterpret_cast<T*>(smem);                             // (kBk, D + kPad)
  T* sv = sk + kBk * (D + kPad);                                  // (kBk, D + kPad)
  T* sq = sv + kBk * (D + kPad);                                  // (kBq, D + kPad)
  T* sdo = sq + kBq * (D + kPad);                                 // (kBq, D + kPad)
  float* sds = reinterpret_cast<float*>(sdo + kBq * (D + kPad));  // (kBq, kBk + 1)
  float* slse = sds + kBq * (kBk + 1);                            // (kBq)
  float* sdelta = slse + kBq;                                     // (kBq)

  const int64_t k_tile = blockIdx.x;
  const int64_t bg = blockIdx.y;  // b * G + g
  const int64_t b = bg / s.G, g = bg % s.G, groups = s.H / s.G;
  const int c = threadIdx.x / kPerRow, part = threadIdx.x % kPerRow;
  const int64_t k0 = k_tile * kBk;
  const int64_t j = k0 + c;

  LoadTile<T, D>(sk, k + bg * s.T * D, k0, kBk, s.T);
  LoadTile<T, D>(sv, v + bg * s.T * D, k0, kBk, s.T);
  float dk_acc[kSlice], dv_acc[kSlice];
#pragma unroll
  for (int t = 0; t < kSlice; ++t) dk_acc[t] = dv_acc[t] = 0.f;

  const TileRange queries = QueryTilesFor(k_tile, kBk, kBq, s.T, s.window);
  for (int64_t hg = 0; hg < groups; ++hg) {
    const int64_t bh = b * s.H + g * groups + hg;
    const T* qh = q + bh * s.T * D;
    const T* doh = dout + bh * s.T * D;
    for (int64_t qt = queries.first; qt < queries.last; ++qt) {
      const int64_t q0 = qt * kBq;
      __syncthreads();  // the previous tile is no longer read
      LoadTile<T, D>(sq, qh, q0, kBq, s.T);
      LoadTile<T, D>(sdo, doh, q0, kBq, s.T);
      for (int r = threadIdx.x; r < kBq; r += blockDim.x) {
        const int64_t i = q0 + r;
        slse[r] = i < s.T ? lse[bh * s.T + i] : 0.f;
        sdelta[r] = i < s.T ? delta[bh * s.T + i] : 0.f;
      }
      __syncthreads();

      for (int r = 0; r < kBq; ++r) {
        const int64_t i = q0 + r;
        float qk = 0.f, dov = 0.f;
#pragma unroll
        for (int t = 0; t < kSlice; ++t) {
          const int d = part * kSlice + t;
          qk += ToF(sq[r * (D + kPad) + d]) * ToF(sk[c * (D + kPad) + d]);
          dov += ToF(sdo[r * (D + kPad) + d]) * ToF(sv[c * (D + kPad) + d]);
        }
        // Every lane, for every r (the same r in the whole block): a query past T, a key past T
        // or a pair outside the window is masked below, after the reductions, never by
        // skipping them.
        qk = RowSum(qk);
        dov = RowSum(dov);
        const bool valid = i < s.T && j < s.T && Attends(i, j, s.window);
        const float p = valid ? __expf(qk * s.scale - slse[r]) : 0.f;
        const float ds = p * (dov - sdelta[r]);  // dL/dscore (before the scale)
#pragma unroll
        for (int t = 0; t < kSlice; ++t) {
          const int d = part * kSlice + t;
          dv_acc[t] += p * ToF(sdo[r * (D + kPad) + d]);
          dk_acc[t] += ds * s.scale * ToF(sq[r * (D + kPad) + d]);
        }
        if (part == 0) sds[r * (kBk + 1) + c] = ds * s.scale;
      }
      __syncthreads();

      // dQ[r, d] += sum_c dS[r, c] K[c, d]: thread (r, part) owns a quarter of row r.
      const int r = threadIdx.x / kPerRow;
      const int64_t i = q0 + r;
      if (i < s.T) {
#pragma unroll
        for (int t = 0; t < kSlice; ++t) {
          const int d = part * kSlice + t;
          float sum = 0.f;
#pragma unroll 8
          for (int cc = 0; cc < kBk; ++cc)
            sum += sds[r * (kBk + 1) + cc] * ToF(sk[cc * (D + kPad) + d]);
          atomicAdd(&dq_accum[(bh * s.T + i) * D + d], sum);
        }
      }
    }
  }
  if (j < s.T) {
#pragma unroll
    for (int t = 0; t < kSlice; ++t) {
      const int d = part * kSlice + t;
      dk[(bg * s.T + j) * D + d] = FromF<T>(dk_acc[t]);
      dv[(bg * s.T + j) * D + d] = FromF<T>(dv_acc[t]);
    }
  }
}

template <typename T>
__global__ void CastKernel(int64_t n, const float* __restrict__ from, T* __restrict__ to) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) to[idx] = FromF<T>(from[idx]);
}

template <typename T, int D>
size_t ForwardSmem() {
  return 3 * kBq * (D + kPad) * sizeof(T) + kBq * (kBk + 1) * sizeof(float);
}
template <typename T, int D>
size_t BackwardSmem() {
  return 4 * kBq * (D + kPad) * sizeof(T) + (kBq * (kBk + 1) + 2 * kBq) * sizeof(float);
}

template <typename T, int D>
cudaError_t Forward(const SwaShape& s, const void* q, const void* k, const void* v, void* out,
                    float* lse, cudaStream_t stream) {
  const size_t smem = ForwardSmem<T, D>();
  cudaError_t err = cudaFuncSetAttribute(
      ForwardKernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  const dim3 grid(static_cast<unsigned>((s.T + kBq - 1) / kBq), static_cast<unsigned>(s.B * s.H));
  ForwardKernel<T, D>
      <<<grid, kThreads, smem, stream>>>(s, static_cast<const T*>(q), static_cast<const T*>(k),
                                         static_cast<const T*>(v), static_cast<T*>(out), lse);
  return cudaGetLastError();
}

template <typename T, int D>
cudaError_t Backward(const SwaShape& s, const void* q, const void* k, const void* v,
                     const void* out, const void* dout, const float* lse, float* delta,
                     float* dq_accum, void* dq, void* dk, void* dv, cudaStream_t stream) {
  const int64_t rows = s.B * s.H * s.T;
  DeltaKernel<T, D><<<static_cast<unsigned>((rows + 255) / 256), 256, 0, stream>>>(
      rows, static_cast<const T*>(out), static_cast<const T*>(dout), delta);
  cudaError_t err = cudaMemsetAsync(dq_accum, 0, rows * D * sizeof(float), stream);
  if (err != cudaSuccess) return err;
  const size_t smem = BackwardSmem<T, D>();
  err = cudaFuncSetAttribute(BackwardKernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  const dim3 grid(static_cast<unsigned>((s.T + kBk - 1) / kBk), static_cast<unsigned>(s.B * s.G));
  BackwardKernel<T, D><<<grid, kThreads, smem, stream>>>(
      s, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<const T*>(dout), lse, delta, dq_accum, static_cast<T*>(dk), static_cast<T*>(dv));
  const int64_t n = rows * D;
  CastKernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(n, dq_accum,
                                                                            static_cast<T*>(dq));
  return cudaGetLastError();
}

bool ValidShape(const SwaShape& s) {
  return s.B > 0 && s.H > 0 && s.G > 0 && s.H % s.G == 0 && s.T > 0 && (s.D == 64 || s.D == 128) &&
         s.B * s.H <= 65535 && s.B * s.G <= 65535;
}

}  // namespace

cudaError_t SwaForward(const SwaShape& shape, DType dtype, const void* q, const void* k,
                       const void* v, void* out, float* lse, cudaStream_t stream) {
  if (!ValidShape(shape)) return cudaErrorInvalidValue;
  const bool d64 = shape.D == 64;
  switch (dtype) {
    case DType::kFloat32:
      return d64 ? Forward<float, 64>(shape, q, k, v, out, lse, stream)
                 : Forward<float, 128>(shape, q, k, v, out, lse, stream);
    case DType::kFloat16:
      return d64 ? Forward<__half, 64>(shape, q, k, v, out, lse, stream)
                 : Forward<__half, 128>(shape, q, k, v, out, lse, stream);
    case DType::kBFloat16:
      return d64 ? Forward<__nv_bfloat16, 64>(shape, q, k, v, out, lse, stream)
                 : Forward<__nv_bfloat16, 128>(shape, q, k, v, out, lse, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t SwaBackward(const SwaShape& shape, DType dtype, const void* q, const void* k,
                        const void* v, const void* out, const void* dout, const float* lse,
                        float* delta, float* dq_accum, void* dq, void* dk, void* dv,
                        cudaStream_t stream) {
  if (!ValidShape(shape)) return cudaErrorInvalidValue;
  const bool d64 = shape.D == 64;
  switch (dtype) {
    case DType::kFloat32:
      return d64 ? Backward<float, 64>(shape, q, k, v, out, dout, lse, delta, dq_accum, dq, dk, dv,
                                       stream)
                 : Backward<float, 128>(shape, q, k, v, out, dout, lse, delta, dq_accum, dq, dk, dv,
                                        stream);
    case DType::kFloat16:
      return d64 ? Backward<__half, 64>(shape, q, k, v, out, dout, lse, delta, dq_accum, dq, dk, dv,
                                        stream)
                 : Backward<__half, 128>(shape, q, k, v, out, dout, lse, delta, dq_accum, dq, dk,
                                         dv, stream);
    case DType::kBFloat16:
      return d64 ? Backward<__nv_bfloat16, 64>(shape, q, k, v, out, dout, lse, delta, dq_accum, dq,
                                               dk, dv, stream)
                 : Backward<__nv_bfloat16, 128>(shape, q, k, v, out, dout, lse, delta, dq_accum, dq,
                                                dk, dv, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace onset::kernels
