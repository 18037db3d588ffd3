#include "db/write_failure_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "tests/db/log_capture.h"

namespace onset::db {
namespace {

using std::chrono::seconds;

class WriteFailureLogTest : public ::testing::Test {
 protected:
  common::FakeClock clock_;
  testing::LogCapture log_;
  WriteFailureLog failures_{std::chrono::seconds(10), clock_};
};

TEST_F(WriteFailureLogTest, LogsTheFirstFailureAndThenOneLinePerIntervalWithTheCount) {
  failures_.Failed("database write failed: a");
  for (int i = 0; i < 1000; ++i) failures_.Failed("database write failed: b");
  EXPECT_EQ(log_.text(), "[error] database write failed: a\n");

  clock_.Advance(seconds(10));
  failures_.Failed("database write failed: c");
  EXPECT_EQ(log_.text(),
            "[error] database write failed: a\n"
            "[error] database write failed: c (1000 more failed writes not logged since the "
            "previous line)\n");
}

TEST_F(WriteFailureLogTest, ASuccessAfterFailuresIsLoggedOnceAndStartsAfresh) {
  failures_.Succeeded();  // nothing failed: nothing to say
  EXPECT_EQ(log_.text(), "");
  failures_.Failed("database write failed: a");
  failures_.Failed("database write failed: b");
  failures_.Succeeded();
  failures_.Succeeded();
  failures_.Failed("database write failed: c");  // logged at once: a new episode
  EXPECT_EQ(log_.text(),
            "[error] database write failed: a\n"
            "[info] database writes succeed again (2 failed before)\n"
            "[error] database write failed: c\n");
}

}  // namespace
}  // namespace onset::db
