// The collective operations a data-parallel run needs, behind one seam: the trainer only sees
// this interface, so a single process (SingleProcess) and a process group over c10d
// (c10d_collective.h) are interchangeable, and tests can run several ranks as threads.
//
// Every rank must call the same operations in the same order with tensors of the same shape,
// dtype and kind of device; each call blocks until the result is in place on this rank.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

namespace onset::model {

class Collective {
 public:
  virtual ~Collective() = default;

  virtual int rank() const = 0;        // 0 .. world_size() - 1
  virtual int world_size() const = 0;  // >= 1

  // Replaces `tensor` (contiguous) by its elementwise sum over the ranks, in place.
  virtual void AllReduceSum(const at::Tensor& tensor) = 0;
  // Replaces `tensor` (contiguous) by rank `root`'s, in place.
  virtual void Broadcast(const at::Tensor& tensor, int root) = 0;
  // Returns once every rank has called it.
  virtual void Barrier() = 0;
};

// A world of one: every operation leaves its tensor as it is.
class SingleProcess final : public Collective {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void AllReduceSum(const at::Tensor&) override {}
  void Broadcast(const at::Tensor&, int) override {}
  void Barrier() override {}
};

// Sums each of `tensors` over the ranks, in place, with few collective calls: the tensors are
// copied into flat buckets (one dtype and device each, at most `bucket_bytes` unless a single
// tensor is larger), each bucket is reduced in one call and copied back. Ranks must pass the
// same list. A world of one returns at once.
inline constexpr int64_t kDefaultBucketBytes = int64_t{64} << 20;
void AllReduceSumFlat(Collective& collective, const std::vector<at::Tensor>& tensors,
                      int64_t bucket_bytes = kDefaultBucketBytes);

}  // namespace onset::model
