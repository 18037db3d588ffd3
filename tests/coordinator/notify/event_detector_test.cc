// What the detector finds in a real store as cells run: failures for good, the end of a study,
// the loss of the last live worker; and nothing of what happened before it started.
#include "coordinator/notify/event_detector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "base/trainer_contract.h"
#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/study/sample_studies.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testutil::TempDir;

constexpr std::chrono::minutes kLiveWindow{10};
constexpr int kSmallStudyCells = 6;

class EventDetectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker_);
    ASSERT_NE(store_, nullptr);
  }

  EventDetector Detector() {
    return EventDetector(store_.get(), store_.get(), store_.get(), &clock_, kLiveWindow);
  }

  std::optional<ClaimedJob> Claim() {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : std::nullopt;
  }
  void Succeed(const ClaimedJob& job) {
    ASSERT_TRUE(
        store_->FinishAttempt(job.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  }
  // A config error: failed for good at the first attempt (failure_policy.h).
  void FailForGood(const ClaimedJob& job) {
    ASSERT_TRUE(store_
                    ->FinishAttempt(job.lease_id, {AttemptOutcome::kFailed, trainer::kExitUsage, 0,
                                                   "bad config", "config error"})
                    .ok());
  }

  // kSmallStudy again under another name.
  void AddOtherStudy(const std::string& name) {
    const std::string yaml =
        absl::StrReplaceAll(testing::kSmallStudy, {{"name: small", "name: " + name}});
    absl::StatusOr<StudySpec> spec = ParseStudyFile("o.yaml", yaml);
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_TRUE(store_->AddStudy({spec->name, "", "o.yaml", spec->source_yaml, spec->cells}).ok());
  }

  std::vector<Notification> Poll(EventDetector& detector) {
    absl::StatusOr<std::vector<Notification>> found = detector.Poll();
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? *found : std::vector<Notification>{};
  }
  static std::vector<std::string> Kinds(const std::vector<Notification>& notifications) {
    std::vector<std::string> kinds;
    for (const Notification& n : notifications) kinds.push_back(n.kind);
    return kinds;
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::string worker_;
};

TEST_F(EventDetectorTest, TheEventLogIsFollowedAcrossStudies) {
  absl::StatusOr<int64_t> before = store_->LastEventSeq();
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(*before, kSmallStudyCells);  // each cell's addition
  AddOtherStudy("other");
  absl::StatusOr<std::vector<CellEvent>> events = store_->EventsAfter(*before - 1, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u + kSmallStudyCells);
  EXPECT_EQ((*events)[0].study, "small");
  EXPECT_EQ((*events)[1].study, "other");
  for (size_t i = 1; i < events->size(); ++i) EXPECT_GT((*events)[i].seq, (*events)[i - 1].seq);
  EXPECT_EQ(*store_->LastEventSeq(), events->back().seq);
  absl::StatusOr<std::vector<CellEvent>> two = store_->EventsAfter(0, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_TRUE(store_->EventsAfter(events->back().seq, 10)->empty());
  absl::StatusOr<std::vector<CellEvent>> by_study = store_->StudyEvents("other", 0, 1);
  ASSERT_TRUE(by_study.ok());
  EXPECT_EQ(by_study->at(0).study, "other");
}

TEST_F(EventDetectorTest, EachStudyEndsOnItsOwn) {
  AddOtherStudy("other");
  EventDetector detector = Detector();
  ASSERT_TRUE(detector.Start().ok());
  // The claim order is the queue's: the first study's cells first.
  std::vector<Notification> all;
  for (int i = 0; i < kSmallStudyCells + 1; ++i) {
    std::optional<ClaimedJob> job = Claim();
    ASSERT_TRUE(job);
    Succeed(*job);
    for (Notification& n : Poll(detector)) all.push_back(std::move(n));
  }
  ASSERT_THAT(Kinds(all), ElementsAre("study_ended"));
  EXPECT_EQ(all[0].fields["study"], "small");
  // The worker goes silent with the other study's cells queued.
  clock_.Advance(kLiveWindow + std::chrono::minutes(1));
  const std::vector<Notification> lost = Poll(detector);
  ASSERT_THAT(Kinds(lost), ElementsAre("workers_lost"));
  EXPECT_EQ(lost[0].fields["cells_waiting"], kSmallStudyCells - 1);
  EXPECT_EQ(lost[0].fields["studies_waiting"], 1);
}

TEST_F(EventDetectorTest, PollBeforeStartIsRefused) {
  EventDetector detector = Detector();
  EXPECT_TRUE(absl::IsFailedPrecondition(detector.Poll().status()));
}

TEST_F(EventDetectorTest, ACellFailingForGoodIsAnnouncedOnce) {
  EventDetector detector = Detector();
  ASSERT_TRUE(detector.Start().ok());
  EXPECT_TRUE(Poll(detector).empty());

  // A crash is retried (backoff): nothing to say yet.
  std::optional<ClaimedJob> crash = Claim();
  ASSERT_TRUE(crash);
  ASSERT_TRUE(
      store_->FinishAttempt(crash->lease_id, {AttemptOutcome::kFailed, 1, 0, "exit 1", ""}).ok());
  EXPECT_TRUE(Poll(detector).empty());

  std::optional<ClaimedJob> job = Claim();
  ASSERT_TRUE(job);
  FailForGood(*job);
  const std::vector<Notification> found = Poll(detector);
  ASSERT_THAT(Kinds(found), ElementsAre("cell_failed"));
  const Notification& n = found[0];
  EXPECT_EQ(n.fields["study"], "small");
  EXPECT_EQ(n.fields["cell_id"], job->cell_id);
  EXPECT_EQ(n.fields["attempt"], 1);
  EXPECT_EQ(n.fields["worker_id"], worker_);
  EXPECT_TRUE(n.fields["axes"].contains("arch"));
  EXPECT_THAT(n.text,
              HasSubstr("onset: cell " + job->cell_id.substr(0, 8) + " of study \"small\""));
  EXPECT_THAT(n.text, HasSubstr("failed for good after 1 attempt"));
  EXPECT_GT(n.at_unix_ms, 0);
  EXPECT_TRUE(Poll(detector).empty());
}

TEST_F(EventDetectorTest, AStudyEndsOnceAndAgainOnlyAfterItRanAgain) {
  EventDetector detector = Detector();
  ASSERT_TRUE(detector.Start().ok());
  std::vector<Notification> all;
  std::string failed_cell;
  for (int i = 0; i < kSmallStudyCells; ++i) {
    std::optional<ClaimedJob> job = Claim();
    ASSERT_TRUE(job);
    if (i == 2) {
      FailForGood(*job);
      failed_cell = job->cell_id;
    } else {
      Succeed(*job);
    }
    for (Notification& n : Poll(detector)) all.push_back(std::move(n));
  }
  ASSERT_THAT(Kinds(all), ElementsAre("cell_failed", "study_ended"));
  EXPECT_EQ(all[1].text,
            "onset: study \"small\" ended: 5 succeeded, 1 failed, 0 cancelled (6 cells)");
  EXPECT_EQ(all[1].fields["study"], "small");
  EXPECT_EQ(all[1].fields["cells"], kSmallStudyCells);
  EXPECT_EQ(all[1].fields["cells_by_state"]["succeeded"], 5);
  EXPECT_TRUE(Poll(detector).empty());

  // Rerun the failed cell: queued, then running, then succeeded, seen in one poll: a new end.
  RerunRequest rerun;
  rerun.study = "small";
  rerun.cell_ids = {failed_cell};
  ASSERT_TRUE(store_->RerunCells(rerun).ok());
  std::optional<ClaimedJob> again = Claim();
  ASSERT_TRUE(again);
  Succeed(*again);
  const std::vector<Notification> second = Poll(detector);
  ASSERT_THAT(Kinds(second), ElementsAre("study_ended"));
  EXPECT_THAT(second[0].text, HasSubstr("6 succeeded, 0 failed"));
  EXPECT_TRUE(Poll(detector).empty());
}

TEST_F(EventDetectorTest, WhatHappenedBeforeStartIsNotAnnounced) {
  for (int i = 0; i < kSmallStudyCells; ++i) {
    std::optional<ClaimedJob> job = Claim();
    ASSERT_TRUE(job);
    if (i == 0) {
      FailForGood(*job);
    } else {
      Succeed(*job);
    }
  }
  EventDetector detector = Detector();
  ASSERT_TRUE(detector.Start().ok());
  EXPECT_GT(detector.last_seq(), 0);
  EXPECT_TRUE(Poll(detector).empty());
}

TEST_F(EventDetectorTest, ManyEventsAreReadInBoundedPolls) {
  EventDetector::Options options;
  options.events_per_read = 2;
  options.max_events_per_poll = 3;
  EventDetector detector(store_.get(), store_.get(), store_.get(), &clock_, kLiveWindow, options);
  ASSERT_TRUE(detector.Start().ok());
  const int64_t start = detector.last_seq();
  for (int i = 0; i < kSmallStudyCells; ++i) {
    std::optional<ClaimedJob> job = Claim();
    ASSERT_TRUE(job);
    FailForGood(*job);  // two events each: queued>running, running>failed
  }
  std::vector<Notification> all;
  for (int i = 0; i < 4; ++i) {
    const std::vector<Notification> found = Poll(detector);
    EXPECT_EQ(detector.last_seq() - start, 3 * (i + 1));
    all.insert(all.end(), found.begin(), found.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kSmallStudyCells));
  // The fifth finds the log's end: only then is the study's end told, after its failures.
  const std::vector<Notification> last = Poll(detector);
  EXPECT_EQ(detector.last_seq() - start, 2 * kSmallStudyCells);
  EXPECT_THAT(Kinds(last), ElementsAre("study_ended"));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].kind, "cell_failed") << i;
}

TEST_F(EventDetectorTest, LosingTheLastLiveWorkerWhileCellsWaitIsAnnouncedOnce) {
  EventDetector detector = Detector();
  ASSERT_TRUE(detector.Start().ok());  // the worker registered just now: live
  EXPECT_TRUE(Poll(detector).empty());

  clock_.Advance(kLiveWindow + std::chrono::minutes(1));
  const std::vector<Notification> lost = Poll(detector);
  ASSERT_THAT(Kinds(lost), ElementsAre("workers_lost"));
  EXPECT_EQ(lost[0].fields["cells_waiting"], kSmallStudyCells);
  EXPECT_EQ(lost[0].fields["studies_waiting"], 1);
  EXPECT_EQ(lost[0].text, "onset: no live worker left; 6 cells wait in 1 study");
  EXPECT_EQ(lost[0].at_unix_ms, clock_.WallUnixMs());

  // Still none live: said once.
  clock_.Advance(std::chrono::minutes(30));
  EXPECT_TRUE(Poll(detector).empty());

  // The worker comes back (a claim is a sign of life), then goes silent again.
  std::optional<ClaimedJob> job = Claim();
  ASSERT_TRUE(job);
  EXPECT_TRUE(Poll(detector).empty());
  clock_.Advance(kLiveWindow + std::chrono::minutes(1));
  const std::vector<Notification> again = Poll(detector);
  ASSERT_THAT(Kinds(again), ElementsAre("workers_lost"));
  EXPECT_EQ(again[0].fields["cells_waiting"], kSmallStudyCells - 1);  // one is running
}

TEST_F(EventDetectorTest, NoWorkerLeftWithNothingWaitingIsNotNews) {
  EventDetector detector = Detector();
  ASSERT_TRUE(detector.Start().ok());
  for (int i = 0; i < kSmallStudyCells; ++i) {
    std::optional<ClaimedJob> job = Claim();
    ASSERT_TRUE(job);
    Succeed(*job);
  }
  EXPECT_THAT(Kinds(Poll(detector)), ElementsAre("study_ended"));
  clock_.Advance(kLiveWindow + std::chrono::minutes(1));
  EXPECT_TRUE(Poll(detector).empty());
}

TEST_F(EventDetectorTest, AWorkerThatExitsCountsAsGone) {
  EventDetector detector = Detector();
  ASSERT_TRUE(detector.Start().ok());
  ASSERT_TRUE(store_->DeregisterWorker(worker_).ok());
  EXPECT_THAT(Kinds(Poll(detector)), ElementsAre("workers_lost"));
}

}  // namespace
}  // namespace onset::coordinator
