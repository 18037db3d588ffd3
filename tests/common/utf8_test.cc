#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace onset::common {
namespace {

const std::string kFffd(kReplacementChar);

TEST(Utf8Test, ValidTextIsValidAndComesBackUnchanged) {
  for (std::string text : {std::string(""), std::string("plain ascii"),
                           std::string("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
                           std::string("nul \0 inside", 13), std::string("\xF4\x8F\xBF\xBF")}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
    EXPECT_EQ(SanitizeUtf8(text), text);
  }
}

TEST(Utf8Test, IllFormedSequencesBecomeOneReplacementCharEach) {
  EXPECT_FALSE(
      IsValidUtf8("a\xFF"
                  "b"));
  EXPECT_EQ(SanitizeUtf8("a\xFF"
                         "b"),
            "a" + kFffd + "b");
  // A lone continuation byte, a cut-off character at the end, a truncated one in the middle.
  EXPECT_EQ(SanitizeUtf8("\x80"), kFffd);
  EXPECT_EQ(SanitizeUtf8("x\xE2\x82"), "x" + kFffd);
  EXPECT_EQ(SanitizeUtf8("\xE2\x82x"), kFffd + "x");
  // Overlong forms, surrogates and code points above U+10FFFF are not UTF-8 for protobuf.
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  EXPECT_TRUE(IsValidUtf8(SanitizeUtf8("\xF5\xFF\xC0\xAF\xED\xA0\x80\xF0\x9F\x98")));
}

TEST(Utf8Test, TruncationNeverSplitsACharacter) {
  const std::string text =
      "ab\xE2\x82\xAC"
      "c";  // a, b, the euro sign (3 bytes), c
  EXPECT_EQ(TruncateUtf8(text, 10), text);
  EXPECT_EQ(TruncateUtf8(text, 6), text);
  EXPECT_EQ(TruncateUtf8(text, 5), "ab\xE2\x82\xAC");
  EXPECT_EQ(TruncateUtf8(text, 4), "ab");
  EXPECT_EQ(TruncateUtf8(text, 3), "ab");
  EXPECT_EQ(TruncateUtf8(text, 2), "ab");
  EXPECT_EQ(TruncateUtf8(text, 0), "");
  const std::string emoji = "\xF0\x9F\x98\x80\xF0\x9F\x98\x80";
  for (size_t n = 0; n <= emoji.size(); ++n) {
    EXPECT_TRUE(IsValidUtf8(TruncateUtf8(emoji, n))) << n;
    EXPECT_EQ(TruncateUtf8(emoji, n).size(), n / 4 * 4) << n;
  }
}

TEST(Utf8Test, ATailNeverStartsInsideACharacter) {
  const std::string text =
      "a\xE2\x82\xAC"
      "bc";  // a, the euro sign (3 bytes), b, c
  EXPECT_EQ(TailUtf8(text, 10), text);
  EXPECT_EQ(TailUtf8(text, 5),
            "\xE2\x82\xAC"
            "bc");
  EXPECT_EQ(TailUtf8(text, 4), "bc");
  EXPECT_EQ(TailUtf8(text, 3), "bc");
  EXPECT_EQ(TailUtf8(text, 2), "bc");
  EXPECT_EQ(TailUtf8(text, 0), "");
  const std::string emoji = "\xF0\x9F\x98\x80\xF0\x9F\x98\x80";
  for (size_t n = 0; n <= emoji.size(); ++n) {
    EXPECT_TRUE(IsValidUtf8(TailUtf8(emoji, n))) << n;
    EXPECT_EQ(TailUtf8(emoji, n).size(), n / 4 * 4) << n;
  }
}

}  // namespace
}  // namespace onset::common
