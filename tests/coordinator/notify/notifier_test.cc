// The webhook queue, with a fake poster: order, retries and their backoff, drops, the
// independence of URLs, and a prompt Stop.
#include "coordinator/notify/notifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/fake_clock.h"
#include "tests/coordinator/notify/fake_poster.h"
#include "tests/db/log_capture.h"

namespace onset::coordinator {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using testing::FakePoster;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kA[] = "https://hooks.example.com/services/T0/B0/SECRET";
constexpr char kB[] = "http://127.0.0.1:9/other";

Notification Note(const std::string& text) {
  Notification n;
  n.kind = kCellFailed;
  n.text = text;
  n.fields = {{"n", text}};
  n.at_unix_ms = 1;
  return n;
}

std::vector<std::string> Texts(const std::vector<FakePoster::Call>& calls) {
  std::vector<std::string> texts;
  for (const FakePoster::Call& c : calls) texts.push_back(nlohmann::json::parse(c.body)["text"]);
  return texts;
}

// Fast retries, so that the tests take milliseconds.
Notifier::Options Fast() {
  Notifier::Options options;
  options.backoff_min = milliseconds(20);
  options.backoff_max = milliseconds(200);
  options.request_timeout = milliseconds(10'000);
  return options;
}

// Polls `done` for up to 10 s.
template <typename F>
bool Eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

TEST(NotifierTest, DeliversInOrderToEveryUrl) {
  FakePoster poster;
  Notifier notifier({kA, kB}, &poster, &common::SystemClock(), Fast());
  for (const char* text : {"one", "two", "three"}) notifier.Publish(Note(text));
  ASSERT_TRUE(poster.WaitForCalls(kA, 3));
  ASSERT_TRUE(poster.WaitForCalls(kB, 3));
  EXPECT_THAT(Texts(poster.Calls(kA)), ElementsAre("one", "two", "three"));
  EXPECT_THAT(Texts(poster.Calls(kB)), ElementsAre("one", "two", "three"));
  const nlohmann::json body = nlohmann::json::parse(poster.Calls(kA)[0].body);
  EXPECT_EQ(body["kind"], "cell_failed");
  EXPECT_EQ(body["n"], "one");
  ASSERT_TRUE(Eventually([&] { return notifier.stats().sent == 6; }));
  EXPECT_EQ(notifier.stats(0).sent, 3);
  EXPECT_EQ(notifier.stats().queued, 0);
  EXPECT_EQ(notifier.stats().failed_attempts, 0);
}

TEST(NotifierTest, RetriesWhatMayPassWithGrowingBackoffThenSucceeds) {
  FakePoster poster;
  poster.Script(kA, {absl::UnavailableError("HTTP 503"), absl::UnavailableError("HTTP 503")});
  Notifier notifier({kA}, &poster, &common::SystemClock(), Fast());
  notifier.Publish(Note("first"));
  notifier.Publish(Note("second"));
  ASSERT_TRUE(poster.WaitForCalls(kA, 4));
  const std::vector<FakePoster::Call> calls = poster.Calls(kA);
  // The first is tried three times before the second goes: order holds through retries.
  EXPECT_THAT(Texts(calls), ElementsAre("first", "first", "first", "second"));
  EXPECT_GE(calls[1].at - calls[0].at, milliseconds(20));
  EXPECT_GE(calls[2].at - calls[1].at, milliseconds(40));
  ASSERT_TRUE(Eventually([&] { return notifier.stats().sent == 2; }));
  EXPECT_EQ(notifier.stats().failed_attempts, 2);
  EXPECT_EQ(notifier.stats().dropped, 0);
}

TEST(NotifierTest, BackoffFollowsTheInjectedClock) {
  FakePoster poster;
  poster.Script(kA, {absl::UnavailableError("HTTP 502")});
  common::FakeClock clock;
  Notifier::Options options;
  options.backoff_min = std::chrono::hours(1);
  options.backoff_max = std::chrono::hours(2);
  Notifier notifier({kA}, &poster, &clock, options);
  notifier.Publish(Note("x"));
  ASSERT_TRUE(poster.WaitForCalls(kA, 1));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(poster.Calls(kA).size(), 1u);  // an hour has not passed
  EXPECT_EQ(notifier.stats().queued, 1);
  clock.Advance(std::chrono::hours(1));
  ASSERT_TRUE(poster.WaitForCalls(kA, 2));
  ASSERT_TRUE(Eventually([&] { return notifier.stats().sent == 1; }));
}

TEST(NotifierTest, DropsWhatCannotPassAndWhatRunsOutOfTries) {
  FakePoster poster;
  poster.Script(kA, {absl::FailedPreconditionError("HTTP 404"), absl::UnavailableError("a"),
                     absl::UnavailableError("b"), absl::UnavailableError("c")});
  Notifier::Options options = Fast();
  options.max_attempts = 3;
  Notifier notifier({kA}, &poster, &common::SystemClock(), options);
  notifier.Publish(Note("not found"));
  notifier.Publish(Note("flaky"));
  notifier.Publish(Note("fine"));
  ASSERT_TRUE(poster.WaitForCalls(kA, 5));
  EXPECT_THAT(Texts(poster.Calls(kA)), ElementsAre("not found", "flaky", "flaky", "flaky", "fine"));
  ASSERT_TRUE(Eventually([&] { return notifier.stats().sent == 1; }));
  EXPECT_EQ(notifier.stats().dropped, 2);
  EXPECT_EQ(notifier.stats().failed_attempts, 4);
}

TEST(NotifierTest, AFullQueueDropsItsOldest) {
  FakePoster poster;
  poster.Hang(kA);
  Notifier::Options options = Fast();
  options.queue_capacity = 2;
  Notifier notifier({kA}, &poster, &common::SystemClock(), options);
  notifier.Publish(Note("1"));
  ASSERT_TRUE(poster.WaitForCalls(kA, 1));  // in flight: out of the queue
  for (const char* text : {"2", "3", "4"}) notifier.Publish(Note(text));
  EXPECT_EQ(notifier.stats().dropped, 1);
  EXPECT_EQ(notifier.stats().queued, 2);
  poster.Release(kA);
  ASSERT_TRUE(poster.WaitForCalls(kA, 3));
  ASSERT_TRUE(Eventually([&] { return notifier.stats().sent == 3; }));
  EXPECT_THAT(Texts(poster.Calls(kA)), ElementsAre("1", "3", "4"));
}

TEST(NotifierTest, AHangingReceiverDelaysNoOtherUrl) {
  FakePoster poster;
  poster.Hang(kA);
  Notifier notifier({kA, kB}, &poster, &common::SystemClock(), Fast());
  notifier.Publish(Note("one"));
  notifier.Publish(Note("two"));
  ASSERT_TRUE(poster.WaitForCalls(kA, 1));
  ASSERT_TRUE(poster.WaitForCalls(kB, 2, milliseconds(5'000)));
  ASSERT_TRUE(Eventually([&] { return notifier.stats(1).sent == 2; }));
  EXPECT_EQ(poster.Calls(kA).size(), 1u);  // still waiting on its first
  EXPECT_EQ(notifier.stats(0).sent, 0);
  poster.Release(kA);
  ASSERT_TRUE(poster.WaitForCalls(kA, 2));
}

TEST(NotifierTest, StopEndsARetryWaitAtOnce) {
  FakePoster poster;
  poster.Script(kA, {absl::UnavailableError("HTTP 500")});
  Notifier::Options options;
  options.backoff_min = std::chrono::hours(1);
  Notifier notifier({kA}, &poster, &common::SystemClock(), options);
  notifier.Publish(Note("x"));
  ASSERT_TRUE(poster.WaitForCalls(kA, 1));
  ASSERT_TRUE(Eventually([&] { return notifier.stats().failed_attempts == 1; }));
  const auto start = std::chrono::steady_clock::now();
  notifier.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  notifier.Stop();  // idempotent
  notifier.Publish(Note("after"));
  EXPECT_EQ(poster.Calls(kA).size(), 1u);
}

TEST(NotifierTest, StopWaitsForAPostInFlightNoLongerThanItsTimeout) {
  FakePoster poster;
  poster.Hang(kA);  // answers Unavailable when the timeout passes
  Notifier::Options options = Fast();
  options.request_timeout = milliseconds(300);
  Notifier notifier({kA, kB}, &poster, &common::SystemClock(), options);
  notifier.Publish(Note("x"));
  ASSERT_TRUE(poster.WaitForCalls(kA, 1));
  const auto start = std::chrono::steady_clock::now();
  notifier.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(NotifierTest, FailuresAreLoggedThrottledWithoutTheSecretPartOfTheUrl) {
  db::testing::LogCapture log;
  FakePoster poster;
  common::FakeClock clock;
  std::vector<absl::Status> failures(5, absl::FailedPreconditionError("HTTP 403"));
  poster.Script(kA, failures);
  Notifier::Options options = Fast();
  options.log_interval = std::chrono::minutes(1);
  {
    Notifier notifier({kA}, &poster, &clock, options);
    for (int i = 0; i < 4; ++i) notifier.Publish(Note("x"));
    ASSERT_TRUE(poster.WaitForCalls(kA, 4));
    ASSERT_TRUE(Eventually([&] { return notifier.stats().dropped == 4; }));
    clock.Advance(std::chrono::minutes(2));
    notifier.Publish(Note("y"));
    ASSERT_TRUE(Eventually([&] { return notifier.stats().dropped == 5; }));
    notifier.Publish(Note("z"));  // delivered: the URL recovered
    ASSERT_TRUE(Eventually([&] { return notifier.stats().sent == 1; }));
    notifier.Stop();
  }
  const std::string text = log.text();
  // The first failure at once, the next four in one line a minute later, then the recovery.
  EXPECT_THAT(text, HasSubstr("https://hooks.example.com/…: 1 failed tries and 1 dropped"));
  EXPECT_THAT(text, HasSubstr("4 failed tries and 4 dropped notifications since the last report"));
  EXPECT_THAT(text, HasSubstr("last error: HTTP 403"));
  EXPECT_THAT(text, HasSubstr("delivering again"));
  EXPECT_THAT(text, Not(HasSubstr("SECRET")));
  size_t warnings = 0;
  for (size_t at = text.find("[warning]"); at != std::string::npos;
       at = text.find("[warning]", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 2u);
}

}  // namespace
}  // namespace onset::coordinator
