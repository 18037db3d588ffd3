// Ranks as threads of this process (tests/model/distributed/thread_ranks.h).
#include "model/training/data_parallel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <ATen/Parallel.h>

#include "model/distributed/c10d_collective.h"
#include "tests/model/distributed/thread_ranks.h"

namespace onset::model {
namespace {

// Runs body(parallel) on `world` thread ranks. Returns the first exception message, or "".
std::string RunRanks(int world, const std::function<void(DataParallel&)>& body) {
  return testing::OnThreadRanks(world, [&](C10dCollective& collective, int) {
    DataParallel parallel(&collective, at::kCPU);
    body(parallel);
  });
}

TEST(DataParallelTest, SharesSplitAStepIntoContiguousNearlyEqualParts) {
  using Share = DataParallel::Share;
  auto shares = [](int64_t seqs, int world) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int r = 0; r < world; ++r) {
      const Share s = DataParallel::ShareOf(seqs, r, world);
      out.emplace_back(s.first, s.end);
    }
    return out;
  };
  using Shares = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(shares(16, 1), (Shares{{0, 16}}));
  EXPECT_EQ(shares(16, 2), (Shares{{0, 8}, {8, 16}}));
  EXPECT_EQ(shares(3, 2), (Shares{{0, 1}, {1, 3}}));          // uneven: 1 and 2
  EXPECT_EQ(shares(2, 3), (Shares{{0, 0}, {0, 1}, {1, 2}}));  // rank 0 has none
  for (int64_t seqs = 0; seqs <= 12; ++seqs) {
    for (int world = 1; world <= 5; ++world) {
      const Shares s = shares(seqs, world);
      EXPECT_EQ(s.front().first, 0);
      EXPECT_EQ(s.back().second, seqs);
      for (int r = 0; r < world; ++r) {
        const int64_t size = s[r].second - s[r].first;
        EXPECT_TRUE(size == seqs / world || size == seqs / world + 1) << seqs << "/" << world;
        if (r > 0) {
          EXPECT_EQ(s[r].first, s[r - 1].second);
        }
      }
    }
  }
}

// A world of one that counts the calls made to it.
class CountingWorldOfOne : public Collective {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void AllReduceSum(const at::Tensor&) override { ++calls; }
  void Broadcast(const at::Tensor&, int) override { ++calls; }
  void Barrier() override { ++calls; }
  int calls = 0;
};

TEST(DataParallelTest, AWorldOfOneMakesNoCollectiveCalls) {
  CountingWorldOfOne one;
  DataParallel parallel(&one, at::kCPU);
  EXPECT_EQ(parallel.rank(), 0);
  EXPECT_EQ(parallel.world_size(), 1);
  EXPECT_TRUE(parallel.lead());
  EXPECT_FALSE(parallel.distributed());
  EXPECT_TRUE(parallel.AnyRank(true));
  EXPECT_FALSE(parallel.AnyRank(false));
  EXPECT_EQ(parallel.FromLead({3, 4}), (std::vector<int64_t>{3, 4}));
  torch::nn::Linear linear(2, 3);
  parallel.BroadcastModel(*linear);
  at::Tensor w = linear->weight;
  w.mutable_grad() = at::ones_like(w);
  parallel.SumGradients({w, linear->bias}, at::ones({}));
  EXPECT_TRUE(at::equal(w.grad(), at::ones_like(w)));
  EXPECT_FALSE(linear->bias.grad().defined());
  parallel.Barrier();
  EXPECT_EQ(one.calls, 0);

  DataParallel alone(nullptr, at::kCPU);  // no collective at all: a single process
  EXPECT_EQ(alone.world_size(), 1);
  EXPECT_TRUE(alone.AnyRank(true));
}

TEST(DataParallelTest, GradientsAreSummedAndOnesNoRankReachedStayUndefined) {
  const int world = 3;
  std::vector<at::Tensor> a(world), b(world), c(world), loss(world);
  const std::string error = RunRanks(world, [&](DataParallel& parallel) {
    const int r = parallel.rank();
    at::Tensor pa = at::zeros({2}).requires_grad_();  // every rank reaches it
    at::Tensor pb = at::zeros({3}).requires_grad_();  // only rank 2 reaches it
    at::Tensor pc = at::zeros({1}).requires_grad_();  // no rank reaches it
    pa.mutable_grad() = at::full({2}, static_cast<float>(r + 1));
    if (r == 2) pb.mutable_grad() = at::full({3}, 5.0f);
    at::Tensor loss_sum = at::full({}, static_cast<float>(10 * (r + 1)));  // ()
    parallel.SumGradients({pa, pb, pc}, loss_sum);
    a[r] = pa.grad();
    b[r] = pb.grad();
    c[r] = pc.grad();
    loss[r] = loss_sum;
  });
  ASSERT_EQ(error, "");
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(at::equal(a[r], at::full({2}, 6.0f))) << r << ": " << a[r];  // 1 + 2 + 3
    ASSERT_TRUE(b[r].defined()) << r;
    EXPECT_TRUE(at::equal(b[r], at::full({3}, 5.0f))) << r << ": " << b[r];  // zeros elsewhere
    EXPECT_FALSE(c[r].defined()) << r;
    EXPECT_EQ(loss[r].item<float>(), 60.0f) << r;
  }
}

// A parameter and a buffer, both filled with one value.
struct Filled : torch::nn::Module {
  explicit Filled(float value) {
    weight = register_parameter("weight", at::full({2, 2}, value));
    count = register_buffer("count", at::full({3}, value));
  }
  at::Tensor weight, count;
};

TEST(DataParallelTest, RanksTakeRankZerosModelFlagsAndNumbers) {
  const int world = 3;
  std::vector<at::Tensor> weights(world), counts(world);
  std::vector<int> stop_none(world), stop_one(world);
  std::vector<std::vector<int64_t>> numbers(world);
  const std::string error = RunRanks(world, [&](DataParallel& parallel) {
    const int r = parallel.rank();
    Filled model(static_cast<float>(r + 1));
    parallel.BroadcastModel(model);
    weights[r] = model.weight.detach().clone();
    counts[r] = model.count.clone();
    stop_none[r] = parallel.AnyRank(false);
    stop_one[r] = parallel.AnyRank(r == 1);  // one rank got the signal
    numbers[r] =
        parallel.FromLead(r == 0 ? std::vector<int64_t>{7, -1} : std::vector<int64_t>{r, r});
    parallel.Barrier();
  });
  ASSERT_EQ(error, "");
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(at::equal(weights[r], at::full({2, 2}, 1.0f))) << r;
    EXPECT_TRUE(at::equal(counts[r], at::full({3}, 1.0f))) << r;
    EXPECT_FALSE(stop_none[r]) << r;
    EXPECT_TRUE(stop_one[r]) << r;
    EXPECT_EQ(numbers[r], (std::vector<int64_t>{7, -1})) << r;
  }
}

}  // namespace
}  // namespace onset::model
