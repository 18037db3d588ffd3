// What a grid cell's run and a WSD trunk's run cover, and when each reports.
#include "model/training/run_span.h"

#include <gtest/gtest.h>

namespace onset::model {
namespace {

CellConfig Cell() {
  CellConfig c;
  c.train.tokens = 1000;
  return c;
}

TEST(RunSpanTest, ACellRunsToItsBudgetAndEvaluatesAtItsPointsAndAtTheEnd) {
  const std::unique_ptr<RunSpan> span = CellSpan(Cell());
  EXPECT_EQ(span->end_tokens(), 1000);
  EXPECT_STREQ(span->end_name(), "budget");
  EXPECT_FALSE(span->EvalDue(100, 200, /*last=*/false));
  EXPECT_TRUE(span->EvalDue(200, 200, false));
  EXPECT_TRUE(span->EvalDue(950, 2000, /*last=*/true));
  EXPECT_TRUE(span->TrainEventAtEnd());
  EXPECT_FALSE(span->FinalEval(999));
  EXPECT_TRUE(span->FinalEval(1000));
  EXPECT_TRUE(span->branch_points().empty());
}

TEST(RunSpanTest, ATrunkRunsToItsLastBranchPointEvaluatingOnlyWhereItsBranchesNeed) {
  TrunkSpec trunk;
  trunk.cell = Cell();
  trunk.until = 600;
  trunk.eval_at = {200, 400};
  trunk.branch_points = {300, 600};
  const std::unique_ptr<RunSpan> span = TrunkSpan(trunk);
  EXPECT_EQ(span->end_tokens(), 600);
  EXPECT_STREQ(span->end_name(), "WSD trunk to");
  EXPECT_TRUE(span->EvalDue(200, 0, false));
  EXPECT_FALSE(span->EvalDue(300, 300, false));  // the cell's own points do not count
  EXPECT_FALSE(span->EvalDue(600, 0, /*last=*/true));
  EXPECT_FALSE(span->TrainEventAtEnd());
  EXPECT_FALSE(span->FinalEval(1000));
  EXPECT_EQ(span->branch_points(), (std::vector<int64_t>{300, 600}));
}

}  // namespace
}  // namespace onset::model
