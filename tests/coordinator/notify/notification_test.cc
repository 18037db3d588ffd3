// What a notification says: its one-line text and the JSON body around it.
#include "coordinator/notify/notification.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(NotificationTest, TheBodyCarriesKindTextTimeAndFields) {
  Notification n;
  n.kind = kWorkersLost;
  n.text = "onset: hello";
  n.fields = {{"cells_waiting", 3}, {"kind", "overridden"}};
  n.at_unix_ms = 1234;
  const nlohmann::json body = nlohmann::json::parse(NotificationJson(n));
  EXPECT_EQ(body["kind"], "workers_lost");
  EXPECT_EQ(body["text"], "onset: hello");
  EXPECT_EQ(body["at_unix_ms"], 1234);
  EXPECT_EQ(body["cells_waiting"], 3);
  EXPECT_EQ(NotificationJson(n).find('\n'), std::string::npos);
}

TEST(NotificationTest, BytesThatAreNotUtf8DoNotCostTheNotification) {
  CellEvent e;
  e.study = "demo";
  e.cell_id = "3fa2c1d0aabbccdd";
  e.attempt = 1;
  e.reason = "bad \xff byte";
  const nlohmann::json body = nlohmann::json::parse(NotificationJson(CellFailedNotification(e)));
  EXPECT_THAT(body["reason"].get<std::string>(), HasSubstr("bad "));
}

TEST(NotificationTest, StudyEndedCountsItsCells) {
  StudyInfo study;
  study.name = "demo";
  study.cells_total = 13;
  study.cells_by_state = {{"succeeded", 12}, {"failed", 1}};
  const Notification n = StudyEndedNotification(study, 42);
  EXPECT_EQ(n.kind, "study_ended");
  EXPECT_EQ(n.text, "onset: study \"demo\" ended: 12 succeeded, 1 failed, 0 cancelled (13 cells)");
  EXPECT_EQ(n.fields["cells"], 13);
  EXPECT_EQ(n.fields["cells_by_state"]["succeeded"], 12);
  EXPECT_EQ(n.at_unix_ms, 42);
  study.cells_by_state["diverged"] = 2;
  EXPECT_THAT(StudyEndedNotification(study, 42).text,
              HasSubstr("1 failed, 2 diverged, 0 cancelled"));
}

TEST(NotificationTest, CellFailedNamesTheCellItsAxesAndReasonOnOneLine) {
  CellEvent e;
  e.study = "demo";
  e.cell_id = "3fa2c1d0aabbccdd";
  e.axes = {{"arch", "LF"}, {"seed", "1"}};
  e.attempt = 3;
  e.worker_id = "w-1";
  e.reason = "exit code 1\nTraceback";
  e.at_unix_ms = 7;
  const Notification n = CellFailedNotification(e);
  EXPECT_EQ(n.text,
            "onset: cell 3fa2c1d0 of study \"demo\" (arch=LF seed=1) failed for good after 3 "
            "attempts: exit code 1 Traceback");
  EXPECT_EQ(n.fields["cell_id"], "3fa2c1d0aabbccdd");
  EXPECT_EQ(n.fields["axes"]["arch"], "LF");
  EXPECT_EQ(n.fields["attempt"], 3);
  EXPECT_EQ(n.fields["worker_id"], "w-1");
  EXPECT_EQ(n.fields["reason"], "exit code 1\nTraceback");
  EXPECT_EQ(n.at_unix_ms, 7);
  e.reason = std::string(1000, 'x');
  EXPECT_LT(CellFailedNotification(e).text.size(), 500u);
}

TEST(NotificationTest, WorkersLostSaysHowManyWait) {
  EXPECT_EQ(WorkersLostNotification(40, 2, 0).text,
            "onset: no live worker left; 40 cells wait in 2 studies");
  EXPECT_EQ(WorkersLostNotification(1, 1, 0).text,
            "onset: no live worker left; 1 cell waits in 1 study");
}

}  // namespace
}  // namespace onset::coordinator
