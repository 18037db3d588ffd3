#include "tests/sim/schedule.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/sim/simulation.h"

namespace onset::sim {
namespace {

// A failing seed replays: the same seed draws the same schedule.
TEST(ScheduleTest, ASeedDrawsTheSameScheduleEveryTime) {
  ScheduleOptions options;
  const std::vector<Action> a = DrawSchedule(7, options);
  const std::vector<Action> b = DrawSchedule(7, options);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].Describe(), b[i].Describe());
  const std::vector<Action> c = DrawSchedule(8, options);
  bool differs = a.size() != c.size();
  for (size_t i = 0; !differs && i < a.size(); ++i) differs = a[i].Describe() != c[i].Describe();
  EXPECT_TRUE(differs);
}

TEST(ScheduleTest, ActionsStayInTheirWindowAndEveryKindIsDrawn) {
  ScheduleOptions options;
  options.faults_ms = 20'000;
  options.cells = 4;
  options.workers = 2;
  std::set<ActionKind> kinds;
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    int64_t last = 0;
    for (const Action& a : DrawSchedule(seed, options)) {
      EXPECT_GT(a.at_ms, last);
      EXPECT_LT(a.at_ms, options.faults_ms);
      EXPECT_LT(a.cell, options.cells);
      EXPECT_LT(a.worker, options.workers);
      last = a.at_ms;
      kinds.insert(a.kind);
    }
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kActionKinds));
  options.full_disk = false;
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    for (const Action& a : DrawSchedule(seed, options)) EXPECT_NE(a.kind, ActionKind::kDiskFull);
  }
}

// A restore comes only after a backup, and restores and restarts on a backup are two at most.
TEST(ScheduleTest, ARestoreFollowsABackupAndRestartsOnBackupsAreFew) {
  ScheduleOptions options;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    bool backed_up = false;
    int restarts = 0;
    for (const Action& a : DrawSchedule(seed, options)) {
      if (a.kind == ActionKind::kRestore) {
        EXPECT_TRUE(backed_up) << "seed " << seed;
      }
      backed_up = backed_up || a.kind == ActionKind::kBackup;
      restarts += a.kind == ActionKind::kRestore || a.kind == ActionKind::kServeRotated;
    }
    EXPECT_LE(restarts, 2) << "seed " << seed;
  }
}

// CI's seeds (simulation_test.cc) hold every kind of action between them, each way of aiming a
// backup at the served database, and a fresh rerun of a whole study.
TEST(ScheduleTest, CisSeedsHoldEveryKindOfAction) {
  const ScheduleOptions options = ScheduleFor(SimOptions());
  std::set<ActionKind> kinds;
  std::set<int> traps;
  bool fresh_study_rerun = false;
  for (uint32_t seed : kCiSeeds) {
    for (const Action& a : DrawSchedule(seed, options)) {
      kinds.insert(a.kind);
      if (a.kind == ActionKind::kBackupOverServed) traps.insert(a.variant);
      fresh_study_rerun = fresh_study_rerun || (a.kind == ActionKind::kRerunStudy && a.fresh);
    }
  }
  for (int k = 0; k < kActionKinds; ++k) {
    EXPECT_TRUE(kinds.count(static_cast<ActionKind>(k)))
        << KindName(static_cast<ActionKind>(k)) << " is in none of CI's seeds";
  }
  EXPECT_EQ(traps, (std::set<int>{0, 1, 2}));
  EXPECT_TRUE(fresh_study_rerun);
}

}  // namespace
}  // namespace onset::sim
