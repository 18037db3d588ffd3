#include "model/config/json_fields.h"

#include <gtest/gtest.h>

namespace onset::model {
namespace {

using nlohmann::json;

// The error a read of `object` (as section "s") records, or "no error".
template <typename Read>
std::string ErrorOf(const json& object, Read read) {
  std::optional<FieldError> error;
  JsonFieldReader r(object, "s", &error);
  read(r);
  return error ? error->ToString() : "no error";
}

TEST(JsonFieldReaderTest, AbsentAndNullKeysKeepTheField) {
  std::optional<FieldError> error;
  const json object = {{"b", nullptr}};
  JsonFieldReader r(object, "s", &error);
  int a = 7;
  std::string b = "x";
  r.Int("a", &a, 0, 10);
  r.String("b", &b);
  r.RejectUnknown();
  EXPECT_FALSE(error);
  EXPECT_EQ(a, 7);
  EXPECT_EQ(b, "x");
  // An absent section reads like an empty one.
  const json null;
  JsonFieldReader absent(null, "t", &error);
  absent.Int("a", &a, 0, 10);
  absent.RejectUnknown();
  EXPECT_FALSE(error);
  EXPECT_FALSE(absent.Has("a"));
}

TEST(JsonFieldReaderTest, TypesAndRangesNameTheKeyPath) {
  int i = 0;
  double d = 0;
  bool b = false;
  std::string s;
  EXPECT_EQ(ErrorOf({{"k", 2.5}}, [&](JsonFieldReader& r) { r.Int("k", &i, 0, 9); }),
            "s.k: must be an integer");
  EXPECT_EQ(ErrorOf({{"k", 10}}, [&](JsonFieldReader& r) { r.Int("k", &i, 0, 9); }),
            "s.k: must be between 0 and 9");
  EXPECT_EQ(ErrorOf({{"k", "x"}}, [&](JsonFieldReader& r) { r.Double("k", &d, 0.0, 1.0); }),
            "s.k: must be a number");
  EXPECT_EQ(ErrorOf({{"k", 1.5}}, [&](JsonFieldReader& r) { r.Double("k", &d, 0.0, 1.0); }),
            "s.k: must be between 0.0 and 1.0");
  EXPECT_EQ(ErrorOf({{"k", 1}}, [&](JsonFieldReader& r) { r.Bool("k", &b); }),
            "s.k: must be true or false");
  EXPECT_EQ(ErrorOf({{"k", 1}}, [&](JsonFieldReader& r) { r.String("k", &s); }),
            "s.k: must be a string");
  EXPECT_EQ(ErrorOf(json::array(), [](JsonFieldReader&) {}), "s: must be a mapping");
  EXPECT_EQ(ErrorOf({{"k", 4}}, [&](JsonFieldReader& r) { r.Int("k", &i, 0, 9); }), "no error");
  EXPECT_EQ(i, 4);
}

TEST(JsonFieldReaderTest, TokenCounts) {
  int64_t t = 0;
  auto read = [&t](JsonFieldReader& r) { r.Tokens("k", &t, 1, 1'000'000'000'000'000); };
  EXPECT_EQ(ErrorOf({{"k", "1.5M"}}, read), "no error");
  EXPECT_EQ(t, 1'500'000);
  EXPECT_EQ(ErrorOf({{"k", 2e6}}, read), "no error");
  EXPECT_EQ(t, 2'000'000);
  EXPECT_EQ(ErrorOf({{"k", "2.5"}}, read),
            "s.k: must be a token count like 250000, 250K, 1.5M or 2B");
  EXPECT_EQ(ErrorOf({{"k", 0}}, read), "s.k: must be at least 1");
  EXPECT_EQ(ErrorOf({{"k", "2000000B"}}, read),
            "s.k: must be at most 1000000000000000 tokens (1e15)");
  EXPECT_EQ(ParseTokenCount("250K"), 250'000);
  EXPECT_EQ(ParseTokenCount("1_000"), 1000);
  EXPECT_EQ(ParseTokenCount("2b"), 2'000'000'000);
  EXPECT_EQ(ParseTokenCount("1.5"), std::nullopt);
  EXPECT_EQ(ParseTokenCount("1.2.3K"), std::nullopt);
  EXPECT_EQ(ParseTokenCount(""), std::nullopt);
}

TEST(JsonFieldReaderTest, Lists) {
  std::vector<int> ints;
  std::vector<double> numbers;
  std::vector<int64_t> tokens;
  std::vector<std::string> names;
  EXPECT_EQ(ErrorOf({{"k", {1, 20}}}, [&](JsonFieldReader& r) { r.IntList("k", &ints, 1, 9); }),
            "s.k: every entry must be between 1 and 9");
  EXPECT_EQ(ErrorOf({{"k", 3}}, [&](JsonFieldReader& r) { r.IntList("k", &ints, 1, 9); }),
            "s.k: must be a list of integers");
  EXPECT_EQ(ErrorOf({{"k", {0.5, 2}}},
                    [&](JsonFieldReader& r) { r.DoubleList("k", &numbers, 0.0, 1.0); }),
            "s.k: every entry must be between 0.0 and 1.0");
  EXPECT_EQ(ErrorOf({{"k", {"2K", 500, 2000}}},
                    [&](JsonFieldReader& r) { r.TokensList("k", &tokens, 1, 5000); }),
            "no error");
  EXPECT_EQ(tokens, (std::vector<int64_t>{500, 2000}));  // sorted, without repeats
  EXPECT_EQ(
      ErrorOf({{"k", {"9K"}}}, [&](JsonFieldReader& r) { r.TokensList("k", &tokens, 1, 5000); }),
      "s.k: every entry must be a token count between 1 and 5000");
  EXPECT_EQ(ErrorOf({{"k", {"a", "c"}}},
                    [&](JsonFieldReader& r) {
                      r.StringList("k", &names, {"a", "b"});
                    }),
            "s.k: every entry must be one of a, b");
  EXPECT_EQ(ErrorOf({{"k", "a"}},
                    [&](JsonFieldReader& r) {
                      r.StringList("k", &names, {"a", "b"});
                    }),
            "s.k: must be a list of strings out of a, b");
}

TEST(JsonFieldReaderTest, UnknownKeysSuggestTheClosestReadKey) {
  int x = 0;
  auto read = [&x](JsonFieldReader& r) {
    r.Int("layers", &x, 0, 9);
    r.Int("heads", &x, 0, 9);
    r.RejectUnknown();
  };
  EXPECT_EQ(ErrorOf({{"layerz", 1}}, read), "s.layerz: unknown key (did you mean s.layers?)");
  EXPECT_EQ(ErrorOf({{"xyzzy", 1}}, read), "s.xyzzy: unknown key");
  std::optional<FieldError> error;
  const json empty = json::object();
  JsonFieldReader r(empty, "s", &error);
  read(r);
  EXPECT_EQ(r.read_keys(), (std::set<std::string>{"heads", "layers"}));
}

TEST(JsonFieldReaderTest, TheFirstErrorOfASharedSlotWins) {
  std::optional<FieldError> error;
  int x = 0;
  const json object = {{"k", -1}};
  JsonFieldReader a(object, "a", &error);
  JsonFieldReader b(object, "b", &error);
  EXPECT_TRUE(b.ok());
  a.Int("k", &x, 0, 9);
  b.Int("k", &x, 0, 9);
  b.Fail("k", "another problem");
  EXPECT_FALSE(b.ok());
  ASSERT_TRUE(error);
  EXPECT_EQ(error->ToString(), "a.k: must be between 0 and 9");
}

TEST(JsonFieldReaderTest, FieldKindsReadWithTheirRanges) {
  std::optional<FieldError> error;
  const json object = {{"i", 3},    {"t", "2K"},    {"d", 0.5},     {"b", true},  {"s", "x"},
                       {"is", {1}}, {"ds", {0.25}}, {"ts", {"1K"}}, {"ss", {"a"}}};
  JsonFieldReader r(object, "o", &error);
  int i = 0;
  int64_t i64 = 0, t = 0;
  double d = 0;
  bool b = false;
  std::string s;
  std::vector<int> is;
  std::vector<double> ds;
  std::vector<int64_t> ts;
  std::vector<std::string> ss;
  IntIn{0, 9}(r, "i", &i);
  IntIn{0, 9}(r, "i", &i64);
  TokensIn{1, 5000}(r, "t", &t);
  NumberIn{0.0, 1.0}(r, "d", &d);
  AnyBool{}(r, "b", &b);
  AnyString{}(r, "s", &s);
  IntsIn{0, 9}(r, "is", &is);
  NumbersIn{0.0, 1.0}(r, "ds", &ds);
  TokenCountsIn{1, 5000}(r, "ts", &ts);
  StringsOf{{"a"}}(r, "ss", &ss);
  r.RejectUnknown();
  EXPECT_FALSE(error);
  EXPECT_EQ(i, 3);
  EXPECT_EQ(i64, 3);
  EXPECT_EQ(t, 2000);
  EXPECT_EQ(d, 0.5);
  EXPECT_TRUE(b);
  EXPECT_EQ(s, "x");
  EXPECT_EQ(is, std::vector<int>{1});
  EXPECT_EQ(ds, std::vector<double>{0.25});
  EXPECT_EQ(ts, std::vector<int64_t>{1000});
  EXPECT_EQ(ss, std::vector<std::string>{"a"});
  IntIn{0, 2}(r, "i", &i);
  EXPECT_EQ(error->ToString(), "o.i: must be between 0 and 2");
}

TEST(JsonFieldReaderTest, MemberOfAnythingButAnObjectIsNull) {
  EXPECT_EQ(MemberOrNull(json{{"a", 1}}, "a"), json(1));
  EXPECT_TRUE(MemberOrNull(json{{"a", 1}}, "b").is_null());
  EXPECT_TRUE(MemberOrNull(json::array({1}), "a").is_null());
}

TEST(FirstDifferenceTest, NamesTheFirstDifferingPathAndBothValues) {
  const nlohmann::json a = {{"train", {{"lr", 0.003}, {"seed", 1}}}, {"model", {{"layers", 2}}}};
  nlohmann::json b = a;
  EXPECT_FALSE(FirstDifference(a, b).has_value());
  b["train"]["lr"] = 0.001;
  const std::optional<JsonDifference> d = FirstDifference(a, b);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->path, "train.lr");
  EXPECT_EQ(d->a, "0.003");
  EXPECT_EQ(d->b, "0.001");
  b = a;
  b["train"].erase("seed");
  const std::optional<JsonDifference> gone = FirstDifference(a, b);
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->path, "train.seed");
  EXPECT_EQ(gone->a, "1");
  EXPECT_EQ(gone->b, "nothing");
}

}  // namespace
}  // namespace onset::model
