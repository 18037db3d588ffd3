#include "cli/views/watch_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/exit_codes.h"
#include "cli/views/style.h"

namespace onset::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::WatchStudyResponse Snapshot(int cells) {
  v1::WatchStudyResponse m;
  m.set_last_seq(10);
  v1::GetStudyResponse* s = m.mutable_snapshot();
  s->mutable_study()->set_name("demo");
  s->mutable_study()->set_cells_total(cells);
  (*s->mutable_study()->mutable_cells_by_state())["queued"] = cells;
  for (int i = 0; i < cells; ++i) {
    v1::Cell* c = s->add_cells();
    c->set_id("c" + std::to_string(i));
    c->set_state(v1::CELL_STATE_QUEUED);
    c->set_tokens_budget(1000);
    (*c->mutable_axes())["arch"] = "swa";
    (*c->mutable_axes())["tokens"] = "1000";
    (*c->mutable_axes())["train.lr"] = "0.001";
  }
  *m.mutable_study() = s->study();
  return m;
}

v1::WatchStudyResponse Event(int64_t seq, const std::string& cell, v1::CellState from,
                             v1::CellState to, const std::string& reason = "") {
  v1::WatchStudyResponse m;
  m.set_last_seq(seq);
  v1::CellEvent* e = m.add_events();
  e->set_seq(seq);
  e->set_cell_id(cell);
  e->set_from(from);
  e->set_to(to);
  e->set_attempt(1);
  e->set_worker_id("w-1");
  e->set_reason(reason);
  (*e->mutable_axes())["arch"] = "swa";
  return m;
}

TEST(WatchViewTest, PrintsEachChangeAndFinishesWhenEveryCellEnded) {
  WatchView view;
  std::string text = view.Apply(Snapshot(2), 0);
  EXPECT_THAT(text, HasSubstr("demo: 2 cells: 2 queued"));
  EXPECT_EQ(view.last_seq(), 10);
  EXPECT_FALSE(view.Finished());

  text = view.Apply(Event(11, "c0", v1::CELL_STATE_QUEUED, v1::CELL_STATE_RUNNING), 1);
  EXPECT_THAT(text, HasSubstr("c0  arch=swa  queued -> running  attempt 1 on w-1"));
  text = view.Apply(Event(12, "c0", v1::CELL_STATE_RUNNING, v1::CELL_STATE_SUCCEEDED), 2);
  EXPECT_THAT(text, HasSubstr("running -> succeeded"));
  EXPECT_EQ(view.last_seq(), 12);
  EXPECT_FALSE(view.Finished());
  text = view.Apply(
      Event(13, "c1", v1::CELL_STATE_RUNNING, v1::CELL_STATE_FAILED, "out of memory: killed"), 3);
  EXPECT_THAT(text, HasSubstr("running -> failed: out of memory: killed"));
  EXPECT_TRUE(view.Finished());
  EXPECT_EQ(view.ExitCode(), kExitCellsFailed);
  EXPECT_EQ(view.Summary(), "demo: 2 cells: 1 failed, 1 succeeded");
}

TEST(WatchViewTest, DivergedIsAResultNotAFailure) {
  WatchView view;
  view.Apply(Snapshot(1), 0);
  view.Apply(Event(11, "c0", v1::CELL_STATE_RUNNING, v1::CELL_STATE_DIVERGED), 1);
  EXPECT_TRUE(view.Finished());
  EXPECT_EQ(view.ExitCode(), kExitOk);
}

TEST(WatchViewTest, ProgressIsPrintedWhenItMovesButNotMoreOftenThanAsked) {
  WatchView view(Style(), /*progress_every_ms=*/10'000);
  view.Apply(Snapshot(2), 0);
  view.Apply(Event(11, "c0", v1::CELL_STATE_QUEUED, v1::CELL_STATE_RUNNING), 0);
  v1::WatchStudyResponse p;
  p.set_last_seq(11);
  v1::CellProgress* cp = p.add_progress();
  cp->set_cell_id("c0");
  cp->set_tokens_done(500);
  cp->set_tokens_budget(1000);
  cp->set_tokens_per_second(100);
  std::string text = view.Apply(p, 20'000);
  EXPECT_THAT(text, HasSubstr("1 running, tokens 500/2K (25%), 100 tok/s"));
  cp->set_tokens_done(600);
  EXPECT_EQ(view.Apply(p, 25'000), "");  // too soon
  EXPECT_THAT(view.Apply(p, 31'000), HasSubstr("tokens 600/2K"));
}

TEST(WatchViewTest, ACellAddedLaterJoinsTheView) {
  WatchView view;
  view.Apply(Snapshot(1), 0);
  std::string text =
      view.Apply(Event(11, "c9", v1::CELL_STATE_UNSPECIFIED, v1::CELL_STATE_QUEUED), 1);
  EXPECT_THAT(text, HasSubstr("c9  arch=swa  added (queued)"));
  view.Apply(Event(12, "c0", v1::CELL_STATE_RUNNING, v1::CELL_STATE_SUCCEEDED), 2);
  EXPECT_FALSE(view.Finished());  // c9 has not run
}

TEST(WatchViewTest, ColourOnlyWhenAsked) {
  Style plain;
  Style colour{true};
  WatchView view(colour);
  view.Apply(Snapshot(1), 0);
  std::string text = view.Apply(Event(11, "c0", v1::CELL_STATE_RUNNING, v1::CELL_STATE_FAILED), 1);
  EXPECT_THAT(text, HasSubstr("\x1b[31mfailed\x1b[0m"));
  WatchView plain_view(plain);
  plain_view.Apply(Snapshot(1), 0);
  text = plain_view.Apply(Event(11, "c0", v1::CELL_STATE_RUNNING, v1::CELL_STATE_FAILED), 1);
  EXPECT_THAT(text, Not(HasSubstr("\x1b")));
}

TEST(WatchViewTest, ASnapshotInSeveralMessagesIsPutTogetherBeforeItCounts) {
  // Three ended cells, sent as two messages: the first two, then the third.
  v1::WatchStudyResponse all = Snapshot(3);
  for (v1::Cell& c : *all.mutable_snapshot()->mutable_cells())
    c.set_state(v1::CELL_STATE_SUCCEEDED);
  v1::WatchStudyResponse first = all;
  first.mutable_snapshot()->mutable_cells()->DeleteSubrange(2, 1);
  first.set_snapshot_more(true);
  v1::WatchStudyResponse second = all;
  second.mutable_snapshot()->mutable_cells()->DeleteSubrange(0, 2);

  WatchView view;
  EXPECT_EQ(view.Apply(first, 0), "");  // nothing printed for half a snapshot
  EXPECT_FALSE(view.Finished());        // the third cell has not been seen yet
  EXPECT_EQ(view.last_seq(), 0);        // a break now must ask for the whole snapshot again
  EXPECT_THAT(view.Apply(second, 0), HasSubstr("demo: 3 cells"));
  EXPECT_EQ(view.study().cells_size(), 3);
  EXPECT_TRUE(view.Finished());
  EXPECT_EQ(view.last_seq(), 10);

  // A new snapshot (after a reconnection from 0) replaces the cells, it does not add to them.
  view.Apply(all, 0);
  EXPECT_EQ(view.study().cells_size(), 3);
}

TEST(DescribeAxesTest, NamedAxesFirstThenTheOthersSorted) {
  google::protobuf::Map<std::string, std::string> axes;
  axes["train.lr"] = "0.001";
  axes["seed"] = "1";
  axes["arch"] = "full";
  axes["tokens"] = "2000000";
  axes["model.d_model"] = "64";
  EXPECT_EQ(DescribeAxes(axes), "arch=full tokens=2M seed=1 model.d_model=64 train.lr=0.001");
}

}  // namespace
}  // namespace onset::cli
