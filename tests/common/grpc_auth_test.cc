#include "common/grpc_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/fake_clock.h"
#include "tests/db/log_capture.h"

namespace onset::common {
namespace {

using ::testing::HasSubstr;

int Lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

TEST(BearerTokenCheckerTest, RefusalsLogTheFirstAtOnceThenOneLineAMinuteWithTheCount) {
  FakeClock clock;
  BearerTokenChecker checker(std::string(32, 'a'), clock);
  db::testing::LogCapture log;
  // What a client without a token can send in a few seconds.
  for (int i = 0; i < 10'000; ++i)
    checker.LogRefusal("ipv4:127.0.0.1:" + std::to_string(i), "no token");
  EXPECT_EQ(Lines(log.text()), 1) << log.text();
  EXPECT_THAT(log.text(), HasSubstr("refused a call from ipv4:127.0.0.1:0: no token"));

  clock.Advance(BearerTokenChecker::kRefusalLogInterval);
  checker.LogRefusal("ipv4:127.0.0.1:9", "wrong token");
  EXPECT_EQ(Lines(log.text()), 2) << log.text();
  EXPECT_THAT(log.text(),
              HasSubstr("refused a call from ipv4:127.0.0.1:9: wrong token (9999 more refused "
                        "since the last such line)"));
}

}  // namespace
}  // namespace onset::common
