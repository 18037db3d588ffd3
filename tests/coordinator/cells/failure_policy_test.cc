#include "coordinator/cells/failure_policy.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "base/trainer_contract.h"

namespace onset::coordinator {
namespace {

using std::chrono::milliseconds;

TEST(FailurePolicyTest, ClassifiesByExitStatusAndStderr) {
  EXPECT_EQ(ClassifyFailure(1, 0, "boom"), FailureClass::kCrash);
  EXPECT_EQ(ClassifyFailure(std::nullopt, SIGSEGV, ""), FailureClass::kCrash);
  // A bare SIGKILL may be a person or the OOM killer: retried, not called OOM.
  EXPECT_EQ(ClassifyFailure(std::nullopt, SIGKILL, ""), FailureClass::kCrash);
  EXPECT_EQ(ClassifyFailure(trainer::kExitUsage, 0, "cell.json: train.lr: must be a number"),
            FailureClass::kConfig);
  EXPECT_EQ(ClassifyFailure(1, 0, "terminate called after throwing 'std::bad_alloc'"),
            FailureClass::kOom);
  EXPECT_EQ(ClassifyFailure(1, 0, "torch.OutOfMemoryError: CUDA out of memory. Tried to"),
            FailureClass::kOom);
  EXPECT_EQ(ClassifyFailure(std::nullopt, SIGKILL, "mmap: Cannot allocate memory"),
            FailureClass::kOom);
}

TEST(FailurePolicyTest, RetriesCrashesAndLostWorkersUpToTheLimit) {
  RetryPolicy p;  // 3 failures
  EXPECT_TRUE(p.Retries(FailureClass::kCrash, 1));
  EXPECT_TRUE(p.Retries(FailureClass::kLost, 2));
  EXPECT_FALSE(p.Retries(FailureClass::kCrash, 3));
  EXPECT_FALSE(p.Retries(FailureClass::kOom, 1));
  EXPECT_FALSE(p.Retries(FailureClass::kConfig, 1));
}

TEST(FailurePolicyTest, BackoffDoublesUpToTheCap) {
  RetryPolicy p;
  p.base_backoff = milliseconds(1000);
  p.max_backoff = milliseconds(5000);
  EXPECT_EQ(p.Backoff(1), milliseconds(1000));
  EXPECT_EQ(p.Backoff(2), milliseconds(2000));
  EXPECT_EQ(p.Backoff(3), milliseconds(4000));
  EXPECT_EQ(p.Backoff(4), milliseconds(5000));
  EXPECT_EQ(p.Backoff(60), milliseconds(5000));  // no overflow
}

TEST(FailurePolicyTest, DescribesTheCause) {
  EXPECT_EQ(DescribeFailure(FailureClass::kOom, std::nullopt, SIGKILL, ""),
            "out of memory: killed by SIGKILL");
  EXPECT_EQ(DescribeFailure(FailureClass::kOom, 1, 0, "exit code 1"), "out of memory: exit code 1");
  EXPECT_EQ(DescribeFailure(FailureClass::kConfig, 2, 0, ""),
            "config or data refused by the trainer: exit code 2");
  EXPECT_EQ(DescribeFailure(FailureClass::kCrash, 1, 0, "exit code 1"), "exit code 1");
}

}  // namespace
}  // namespace onset::coordinator
