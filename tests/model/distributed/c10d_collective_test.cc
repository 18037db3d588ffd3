// Ranks as threads of this process, meeting through a c10d HashStore or a FileStore in a temp
// directory; Gloo on the CPU. (NCCL needs GPUs and is not exercised here.)
#include "model/distributed/c10d_collective.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "tests/model/distributed/thread_ranks.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

constexpr std::chrono::milliseconds kTimeout{30'000};

// Runs body(collective) on `world` thread ranks joined through `store`, checking each knows its
// place. Returns the first exception message, or "".
std::string RunRanks(int world, const c10::intrusive_ptr<c10d::Store>& store,
                     const std::function<void(Collective&)>& body) {
  return testing::OnThreadRanks(
      world,
      [&](C10dCollective& collective, int r) {
        EXPECT_EQ(collective.rank(), r);
        EXPECT_EQ(collective.world_size(), world);
        body(collective);
      },
      store, kTimeout);
}

class C10dCollectiveTest : public ::testing::Test {
 protected:
  void SetUp() override { at::set_num_threads(1); }
};

TEST_F(C10dCollectiveTest, AllReduceBroadcastAndBarrierOverGloo) {
  const int world = 3;
  std::vector<at::Tensor> sums(world), broadcasts(world);
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::string error = RunRanks(world, store, [&](Collective& c) {
    const int r = c.rank();
    at::Tensor t = at::arange(4, at::kFloat) + 10 * r;  // (4,)
    c.AllReduceSum(t);
    sums[r] = t;
    at::Tensor b = at::full({2}, static_cast<int64_t>(r + 7), at::kLong);  // (2,)
    c.Broadcast(b, /*root=*/1);
    broadcasts[r] = b;
    c.Barrier();
  });
  ASSERT_EQ(error, "");
  for (int r = 0; r < world; ++r) {
    // 3 * [0, 1, 2, 3] + 10 * (0 + 1 + 2)
    EXPECT_TRUE(at::equal(sums[r], at::arange(4, at::kFloat) * 3 + 30)) << sums[r];
    EXPECT_TRUE(at::equal(broadcasts[r], at::full({2}, int64_t{8}, at::kLong))) << r;
  }
}

// Tensors of a few shapes with values that do not sum exactly in float.
std::vector<at::Tensor> Values() {
  return {at::sin(at::arange(21, at::kFloat)).view({7, 3}), at::cos(at::arange(5, at::kFloat)),
          at::full({}, 0.1f)};
}

TEST_F(C10dCollectiveTest, FlatReductionOfManyTensorsGivesEveryRankTheSameSums) {
  const int world = 2;
  std::vector<std::vector<at::Tensor>> results(world);
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::string error = RunRanks(world, store, [&](Collective& c) {
    std::vector<at::Tensor> mine = Values();
    for (at::Tensor& t : mine) t.mul_(c.rank() + 1);  // rank r holds (r + 1) * x
    AllReduceSumFlat(c, mine, /*bucket_bytes=*/64);
    results[c.rank()] = mine;
  });
  ASSERT_EQ(error, "");
  std::vector<at::Tensor> x = Values();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(at::allclose(results[0][i], x[i] * 3)) << i;
    EXPECT_TRUE(at::equal(results[0][i], results[1][i])) << i;  // bit for bit
  }
}

TEST_F(C10dCollectiveTest, RanksMeetThroughAFileStore) {
  const testutil::TempDir dir;
  const std::string path = dir.File("store");
  const int world = 2;
  std::vector<float> sums(world);
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        // Each rank opens the file itself, as separate processes do.
        C10dCollective c(OpenFileStore(path, world, kTimeout), r, world, at::kCPU, kTimeout,
                         "127.0.0.1");
        at::Tensor t = at::full({1}, static_cast<float>(r + 1));  // (1,)
        c.AllReduceSum(t);
        sums[r] = t.item<float>();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors, std::vector<std::string>(world));
  EXPECT_EQ(sums, (std::vector<float>{3, 3}));
}

TEST_F(C10dCollectiveTest, AMissingRankTimesOutInsteadOfHanging) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::milliseconds(500));
  EXPECT_ANY_THROW(
      C10dCollective(store, 0, 2, at::kCPU, std::chrono::milliseconds(500), "127.0.0.1"));
}

TEST_F(C10dCollectiveTest, NcclNeedsADeviceIndex) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  EXPECT_THROW(C10dCollective(store, 0, 1, at::Device(at::kCUDA), kTimeout), std::invalid_argument);
}

}  // namespace
}  // namespace onset::model
