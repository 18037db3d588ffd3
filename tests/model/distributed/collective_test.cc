#include "model/distributed/collective.h"

#include <gtest/gtest.h>

#include <ATen/Parallel.h>

namespace onset::model {
namespace {

// Stands in for two ranks holding the same tensors: a sum over them doubles each element. Keeps
// the sizes it was called with.
class TwoIdenticalRanks : public Collective {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void AllReduceSum(const at::Tensor& tensor) override {
    ASSERT_TRUE(tensor.is_contiguous());
    calls.push_back(tensor.numel());
    tensor.mul_(2);
  }
  void Broadcast(const at::Tensor&, int) override {}
  void Barrier() override {}
  std::vector<int64_t> calls;
};

TEST(CollectiveTest, SingleProcessLeavesTensorsAlone) {
  SingleProcess one;
  EXPECT_EQ(one.rank(), 0);
  EXPECT_EQ(one.world_size(), 1);
  at::Tensor t = at::arange(4, at::kFloat);
  one.AllReduceSum(t);
  one.Broadcast(t, 0);
  one.Barrier();
  AllReduceSumFlat(one, {t});
  EXPECT_TRUE(at::equal(t, at::arange(4, at::kFloat)));
}

TEST(CollectiveTest, FlatReductionFillsBucketsAndCopiesBack) {
  at::set_num_threads(1);
  TwoIdenticalRanks two;
  // 4-byte floats: a 6 x 4 matrix is 96 bytes, a 10-vector 40, a scalar 4; then int64s.
  std::vector<at::Tensor> tensors = {at::arange(24, at::kFloat).view({6, 4}),
                                     at::arange(10, at::kFloat), at::full({}, 3.0),
                                     at::arange(5, at::kLong), at::arange(3, at::kLong)};
  std::vector<at::Tensor> before;
  for (const at::Tensor& t : tensors) before.push_back(t.clone());
  AllReduceSumFlat(two, tensors, /*bucket_bytes=*/128);
  // The matrix and vector overflow 128 bytes together; the scalar joins the vector; the dtype
  // change starts a new bucket.
  EXPECT_EQ(two.calls, (std::vector<int64_t>{24, 11, 8}));
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(tensors[i].sizes(), before[i].sizes());
    EXPECT_TRUE(at::equal(tensors[i], before[i] * 2)) << i;
  }
}

TEST(CollectiveTest, ATensorLargerThanABucketGoesAlone) {
  TwoIdenticalRanks two;
  at::Tensor small = at::ones({2});
  at::Tensor big = at::ones({100});
  AllReduceSumFlat(two, {small, big, small}, /*bucket_bytes=*/16);
  EXPECT_EQ(two.calls, (std::vector<int64_t>{2, 100, 2}));
  EXPECT_EQ(big.sum().item<float>(), 200);
  EXPECT_EQ(small.sum().item<float>(), 8);  // reduced twice: it was passed twice
}

}  // namespace
}  // namespace onset::model
