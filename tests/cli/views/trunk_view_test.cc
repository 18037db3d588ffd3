#include "cli/views/trunk_view.h"

#include <gtest/gtest.h>

#include "cli/views/render.h"

namespace onset::cli {
namespace {

v1::Cell Row(const std::string& id, const std::string& role, int64_t budget, int64_t done,
             v1::CellState state) {
  v1::Cell cell;
  cell.set_id(id);
  cell.set_study("wsd");
  cell.set_state(state);
  cell.set_role(role);
  (*cell.mutable_axes())["arch"] = "full";
  (*cell.mutable_axes())["window"] = "-";
  (*cell.mutable_axes())["pos"] = "rope";
  (*cell.mutable_axes())["tokens"] = std::to_string(budget);
  (*cell.mutable_axes())["seed"] = "0";
  cell.set_tokens_budget(budget);
  cell.set_tokens_done(done);
  return cell;
}

v1::Cell Branch(const std::string& id, int64_t budget, int64_t branch_tokens, int64_t done,
                v1::CellState state, bool waiting = false) {
  v1::Cell cell = Row(id, "branch", budget, done, state);
  cell.set_trunk_id("7777777777777777");
  cell.set_branch_tokens(branch_tokens);
  cell.set_waiting_for_trunk(waiting);
  return cell;
}

TEST(TrunkViewTest, ABranchTrainsFromItsBranchPointAndATrunkToItsEnd) {
  const v1::Cell trunk = Row("7777777777777777", "trunk", 800'000, 500'000, v1::CELL_STATE_RUNNING);
  EXPECT_EQ(TokensToTrain(trunk), 800'000);
  EXPECT_EQ(TokensTrained(trunk), 500'000);
  // A branch resumed at 800K has replayed the trunk's points: they are not its own training.
  const v1::Cell branch = Branch("b", 1'000'000, 800'000, 850'000, v1::CELL_STATE_RUNNING);
  EXPECT_EQ(TokensToTrain(branch), 200'000);
  EXPECT_EQ(TokensTrained(branch), 50'000);
  EXPECT_EQ(TokensTrained(Branch("b", 1'000'000, 800'000, 0, v1::CELL_STATE_QUEUED)), 0);
  const v1::Cell alone = Row("c", "cell", 1'000'000, 2'000'000, v1::CELL_STATE_RUNNING);
  EXPECT_EQ(TokensToTrain(alone), 1'000'000);
  EXPECT_EQ(TokensTrained(alone), 1'000'000);
  EXPECT_EQ(TokensToTrain(Row("d", "", 5, 0, v1::CELL_STATE_QUEUED)), 5);  // older coordinator
}

TEST(TrunkViewTest, RoleTextSaysWhereABranchStartsAndThatItWaits) {
  EXPECT_EQ(RoleText(Row("t", "trunk", 800'000, 0, v1::CELL_STATE_QUEUED)), "trunk");
  EXPECT_EQ(RoleText(Branch("b", 1'000'000, 800'000, 0, v1::CELL_STATE_QUEUED, true)),
            "branch of 77777777 at 800K (waiting for it)");
  EXPECT_EQ(RoleText(Branch("b", 1'000'000, 800'000, 0, v1::CELL_STATE_RUNNING)),
            "branch of 77777777 at 800K");
  EXPECT_EQ(RoleText(Row("c", "cell", 1, 0, v1::CELL_STATE_QUEUED)), "");
}

TEST(TrunkViewTest, SharingSummaryShowsTheSavingAndTheNotes) {
  v1::SubmitStudyResponse response;
  response.set_tokens_to_train(9'400'000);
  response.set_tokens_without_sharing(15'000'000);
  EXPECT_EQ(SharingSummary(response),
            "9.4M tokens to train (15M without trunk sharing, 1.6x less)\n");
  response.set_tokens_to_train(15'000'000);
  response.add_sharing_notes("the budgets of 1 grid point cannot share a trunk");
  EXPECT_EQ(SharingSummary(response),
            "15M tokens to train\nnote: the budgets of 1 grid point cannot share a trunk\n");
  EXPECT_EQ(SharingSummary(v1::SubmitStudyResponse()), "");
}

TEST(TrunkViewTest, StatusShowsTrunksAndBranchesAndCountsTheTokensActuallyTrained) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("wsd");
  *study.add_cells() = Row("7777777777777777", "trunk", 800'000, 800'000, v1::CELL_STATE_SUCCEEDED);
  *study.add_cells() = Branch("aaaa", 500'000, 400'000, 500'000, v1::CELL_STATE_SUCCEEDED);
  *study.add_cells() = Branch("bbbb", 1'000'000, 800'000, 900'000, v1::CELL_STATE_RUNNING);
  // Trained: 800K of the trunk, 100K of the first branch, 100K of the second's 200K.
  EXPECT_EQ(StudyProgress(study), "tokens 1M/1.1M (90%)");
  const std::string table = RenderStudy(study);
  EXPECT_NE(table.find("RUNS AS"), std::string::npos) << table;
  EXPECT_NE(table.find("branch of 77777777 at 400K"), std::string::npos) << table;
  EXPECT_NE(table.find("trunk"), std::string::npos) << table;
}

TEST(TrunkViewTest, PreviewCountsTrunksApartFromCells) {
  v1::SubmitStudyResponse preview;
  preview.mutable_study()->set_name("wsd");
  *preview.add_cells() = Row("7777777777777777", "trunk", 800'000, 0, v1::CELL_STATE_QUEUED);
  *preview.add_cells() = Branch("aaaa", 500'000, 400'000, 0, v1::CELL_STATE_QUEUED, true);
  *preview.add_cells() = Branch("bbbb", 1'000'000, 800'000, 0, v1::CELL_STATE_QUEUED, true);
  for (const v1::Cell& c : preview.cells()) preview.add_new_cell_ids(c.id());
  preview.set_tokens_to_train(1'100'000);
  preview.set_tokens_without_sharing(1'500'000);
  const std::string text = RenderSubmitPreview(preview);
  EXPECT_NE(text.find("wsd: 2 cells and 1 trunk, 3 new; dry run, nothing written\n"
                      "1.1M tokens to train (1.5M without trunk sharing, 1.4x less)\n"),
            std::string::npos)
      << text;
}

TEST(TrunkViewTest, AFreshRerunSaysWhatATrunkAndABranchDiscard) {
  v1::GetStudyResponse study;
  *study.add_cells() = Row("7777777777777777", "trunk", 800'000, 800'000, v1::CELL_STATE_FAILED);
  *study.add_cells() = Branch("aaaa0000", 500'000, 400'000, 500'000, v1::CELL_STATE_SUCCEEDED);
  *study.add_cells() = Branch("bbbb0000", 1'000'000, 800'000, 0, v1::CELL_STATE_FAILED);
  *study.add_cells() = Branch("cccc0000", 900'000, 720'000, 0, v1::CELL_STATE_FAILED);
  EXPECT_EQ(DescribeFreshRerun(study, {"7777"}),
            "trunk 77777777: its checkpoints and metrics are discarded and it trains again from "
            "scratch; 2 branches not started yet will wait for it; 1 branch already past its "
            "branch point keep what they have\n");
  EXPECT_EQ(DescribeFreshRerun(study, {"bbbb0000"}),
            "branch bbbb0000: re-runs only its decay, from trunk 77777777's checkpoint at 800K "
            "tokens\n");
  EXPECT_EQ(DescribeFreshRerun(study, {"dddd"}), "");
}

TEST(TrunkViewTest, AnalysesSeeNoTrunks) {
  v1::GetStudyResponse study;
  *study.add_cells() = Row("7777777777777777", "trunk", 800'000, 0, v1::CELL_STATE_QUEUED);
  *study.add_cells() = Branch("aaaa", 500'000, 400'000, 0, v1::CELL_STATE_QUEUED);
  *study.add_cells() = Row("cccc", "cell", 500'000, 0, v1::CELL_STATE_QUEUED);
  RemoveTrunks(&study);
  ASSERT_EQ(study.cells_size(), 2);
  EXPECT_EQ(study.cells(0).id(), "aaaa");
  EXPECT_EQ(study.cells(1).id(), "cccc");
}

}  // namespace
}  // namespace onset::cli
