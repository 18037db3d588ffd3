#include "common/tensorboard/cell_run.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace onset::tensorboard {
namespace {

constexpr char kId[] = "0123456789abcdef";

TEST(RunDirectoryTest, GroupsSeedsOfOneVariantUnderItsAxes) {
  EXPECT_EQ(RunDirectory({{"arch", "swa"}, {"window", "16"}, {"seed", "2"}}, kId),
            "arch=swa,window=16/seed=2,id=0123456789abcdef");
  EXPECT_EQ(RunDirectory({{"arch", "full"}}, kId), "arch=full/id=0123456789abcdef");
  EXPECT_EQ(RunDirectory({}, kId), "id=0123456789abcdef");
}

TEST(RunDirectoryTest, NeverLeavesItsDirectory) {
  const std::string dir =
      RunDirectory({{"arch", "../../etc"}, {"pos", "F:rope S/nope"}, {"seed", "/"}}, kId);
  EXPECT_EQ(dir, "arch=.._.._etc,pos=F:rope_S_nope/seed=_,id=0123456789abcdef");
  const std::string bounded = RunDirectory({{"arch", std::string(1000, 'x')}}, kId);
  EXPECT_EQ(bounded.find('/'), 200u);
}

CellRun DemoRun() {
  CellRun run;
  run.study = "demo";
  run.id = kId;
  run.axes = {{"arch", "swa"}, {"seed", "1"}};
  run.state = "running";
  run.tokens_done = 10;
  run.tokens_budget = 100;
  return run;
}

TEST(CellTextTest, NamesTheCellItsAxesAndItsConfigAsACodeBlock) {
  CellRun run = DemoRun();
  run.config_json = R"({"model":{"layers":2}})";
  const std::string text = CellText(run);
  EXPECT_NE(text.find("study `demo`, cell `0123456789abcdef` (running, 10 of 100 tokens)"),
            std::string::npos);
  EXPECT_NE(text.find("| arch | swa |\n| seed | 1 |\n"), std::string::npos);
  EXPECT_NE(text.find("\n    {\n      \"model\": {\n        \"layers\": 2\n"), std::string::npos);
}

TEST(CellTextTest, AConfigThatIsNotJsonIsShownAsItIs) {
  CellRun run = DemoRun();
  run.config_json = "{not json";
  EXPECT_NE(CellText(run).find("\n    {not json\n"), std::string::npos);
}

TEST(CellHParamsTest, EveryAxisAndTheStudyWithTheSeedsOfAVariantOneGroup) {
  const CellRun run = DemoRun();
  const std::map<std::string, HParamValue> hparams = CellHParams(run);
  EXPECT_EQ(std::get<std::string>(hparams.at("arch")), "swa");
  EXPECT_EQ(std::get<std::string>(hparams.at("seed")), "1");
  EXPECT_EQ(std::get<std::string>(hparams.at("study")), "demo");
  CellRun other_seed = run;
  other_seed.axes["seed"] = "2";
  EXPECT_EQ(CellGroup(run), "demo/arch=swa");
  EXPECT_EQ(CellGroup(other_seed), CellGroup(run));
}

}  // namespace
}  // namespace onset::tensorboard
