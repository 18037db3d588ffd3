#include "base/metrics_line.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace onset::trainer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

MetricsEvent ParseOk(const std::string& line) {
  MetricsLineError error;
  std::optional<MetricsEvent> e = MetricsEvent::Parse(line, &error);
  EXPECT_TRUE(e.has_value()) << line << ": " << error.what;
  return e.value_or(MetricsEvent{});
}

std::string Why(const std::string& line) {
  MetricsLineError error;
  EXPECT_FALSE(MetricsEvent::Parse(line, &error).has_value()) << line;
  return error.what;
}

TEST(MetricsLineTest, FormatsTheProtocolInItsOrder) {
  MetricsEvent e{kEventTrain, 4096, 3, {{"train/lr", 0.001}, {"train/loss", 2.5}}};
  EXPECT_EQ(
      e.Format(),
      R"({"event":"train","tokens":4096,"step":3,"metrics":{"train/loss":2.5,"train/lr":0.001}})");
  MetricsEvent stopped{kEventStopped, 10, std::nullopt, {}};
  EXPECT_EQ(stopped.Format(), R"({"event":"stopped","tokens":10,"metrics":{}})");
  e.at_unix_ms = 1796558400123;
  EXPECT_EQ(e.Format(), R"({"event":"train","tokens":4096,"step":3,"at_unix_ms":1796558400123,)"
                        R"("metrics":{"train/loss":2.5,"train/lr":0.001}})");
}

TEST(MetricsLineTest, TheWallTimeRoundTripsAndMayBeAbsent) {
  MetricsEvent e{kEventEval, 512, std::nullopt, {{"eval/heldout_loss", 2.0}}, 1796558400123};
  EXPECT_EQ(ParseOk(e.Format()).at_unix_ms, 1796558400123);
  // A line of a trainer from before the wall time: read, with none.
  EXPECT_EQ(ParseOk(R"({"event":"eval","tokens":5,"metrics":{}})").at_unix_ms, std::nullopt);
  EXPECT_EQ(Why(R"({"event":"eval","tokens":5,"at_unix_ms":"noon","metrics":{}})"),
            "\"at_unix_ms\" is not an integer of int64's range");
  EXPECT_EQ(Why(R"({"event":"eval","tokens":5,"at_unix_ms":1.5,"metrics":{}})"),
            "\"at_unix_ms\" is not an integer of int64's range");
}

TEST(MetricsLineTest, EveryEventRoundTrips) {
  int64_t tokens = 0;
  for (const char* name : kMetricsEvents) {
    MetricsEvent e{name, tokens, std::nullopt, {{"a/x", 0.1 * static_cast<double>(tokens)}}};
    if (std::string(name) == kEventTrain) e.step = 7;
    const std::string line = e.Format();
    EXPECT_EQ(line.find('\n'), std::string::npos);
    const MetricsEvent back = ParseOk(line);
    EXPECT_EQ(back.event, name);
    EXPECT_EQ(back.tokens, tokens);
    EXPECT_EQ(back.step, e.step);
    EXPECT_EQ(back.metrics, e.metrics) << line;
    tokens += 1000;
  }
}

TEST(MetricsLineTest, ValuesRoundTripExactly) {
  MetricsEvent e{kEventEval,
                 std::numeric_limits<int64_t>::max(),
                 std::nullopt,
                 {{"a", 0.1}, {"b", 1e-300}, {"c", -2.5e300}, {"d", 1.0 / 3.0}, {"e", 0}}};
  EXPECT_EQ(ParseOk(e.Format()).metrics, e.metrics);
  EXPECT_EQ(ParseOk(e.Format()).tokens, e.tokens);
}

TEST(MetricsLineTest, NotFiniteIsWrittenAsNullAndReadBackAsNan) {
  MetricsEvent e{kEventDiverged,
                 10,
                 std::nullopt,
                 {{"nan", std::nan("")}, {"inf", kInf}, {"-inf", -kInf}, {"ok", 1.5}}};
  const std::string line = e.Format();
  EXPECT_EQ(
      line,
      R"({"event":"diverged","tokens":10,"metrics":{"-inf":null,"inf":null,"nan":null,"ok":1.5}})");
  const MetricsEvent back = ParseOk(line);
  ASSERT_EQ(back.metrics.size(), 4u);
  EXPECT_TRUE(std::isnan(back.metrics.at("nan")));
  EXPECT_TRUE(std::isnan(back.metrics.at("inf")));
  EXPECT_TRUE(std::isnan(back.metrics.at("-inf")));
  EXPECT_EQ(back.metrics.at("ok"), 1.5);
}

TEST(MetricsLineTest, ToleratesWhatANewerTrainerMightAdd) {
  const MetricsEvent e = ParseOk(R"({"event":"warmup","tokens":5,"extra":[1],"metrics":{"x":2}})"
                                 "\n");
  EXPECT_EQ(e.event, "warmup");
  EXPECT_EQ(e.tokens, 5);
  EXPECT_FALSE(e.step.has_value());
  EXPECT_EQ(e.metrics.at("x"), 2);
  // Negative tokens are a reader's bound to apply, not a malformed line.
  EXPECT_EQ(ParseOk(R"({"event":"train","tokens":-1,"metrics":{}})").tokens, -1);
}

TEST(MetricsLineTest, MalformedLinesSayWhy) {
  EXPECT_EQ(Why("not json").rfind("not JSON: parse error at line 1, column 2", 0), 0u)
      << Why("not json");
  EXPECT_EQ(Why("").rfind("not JSON: ", 0), 0u);
  EXPECT_EQ(Why("[1,2]"), "not a JSON object");
  // JSON has no infinity: a number beyond double's range is refused, not read as one.
  EXPECT_EQ(Why(R"({"event":"eval","tokens":1,"metrics":{"x":1e999}})"),
            "not JSON: number overflow parsing '1e999'");
  EXPECT_EQ(Why(R"({"tokens":1,"metrics":{}})"), "no \"event\" string");
  EXPECT_EQ(Why(R"({"event":3,"tokens":1,"metrics":{}})"), "no \"event\" string");
  EXPECT_EQ(Why(R"({"event":"train","metrics":{}})"), "no \"tokens\" integer");
  EXPECT_EQ(Why(R"({"event":"train","tokens":"x","metrics":{}})"), "no \"tokens\" integer");
  EXPECT_EQ(Why(R"({"event":"train","tokens":1.5,"metrics":{}})"), "no \"tokens\" integer");
  EXPECT_EQ(Why(R"({"event":"train","tokens":5})"), "no \"metrics\" object");
  EXPECT_EQ(Why(R"({"event":"train","tokens":5,"metrics":3})"), "no \"metrics\" object");
  EXPECT_EQ(Why(R"({"event":"train","tokens":5,"step":"x","metrics":{}})"),
            "\"step\" is not an integer of int64's range");
  EXPECT_EQ(Why(R"({"event":"train","tokens":5,"step":18446744073709551615,"metrics":{}})"),
            "\"step\" is not an integer of int64's range");
  EXPECT_EQ(Why(R"({"event":"eval","tokens":5,"metrics":{"a":1,"b":"high"}})"),
            "metric \"b\": string, not a number or null");
  EXPECT_EQ(Why(R"({"event":"eval","tokens":5,"metrics":{"b":true}})"),
            "metric \"b\": boolean, not a number or null");
  // A parse error quotes what it read last: never a whole huge line.
  EXPECT_LT(Why("\"" + std::string(1 << 20, 'x')).size(), 300u);
}

TEST(MetricsLineTest, TokensBeyondInt64AreNamedAsWritten) {
  MetricsLineError error;
  EXPECT_FALSE(MetricsEvent::Parse(
      R"({"event":"train","tokens":18446744073709551615,"metrics":{"a":1,"b":null}})", &error));
  EXPECT_EQ(error.what, "\"tokens\" 18446744073709551615: beyond int64's range");
  EXPECT_EQ(error.tokens_beyond_int64, 18446744073709551615u);
  EXPECT_EQ(error.values, 2u);
  // Other errors leave those unset.
  EXPECT_FALSE(MetricsEvent::Parse("{}", &error));
  EXPECT_FALSE(error.tokens_beyond_int64.has_value());
  EXPECT_EQ(error.values, 0u);
  // Without an error to fill, the answer is the same.
  EXPECT_FALSE(MetricsEvent::Parse("{}"));
}

}  // namespace
}  // namespace onset::trainer
