#include "base/did_you_mean.h"

#include <gtest/gtest.h>

namespace onset::base {
namespace {

TEST(EditDistanceTest, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("lr", "lr"), 0);
  EXPECT_EQ(EditDistance("lrr", "lr"), 1);  // deletion
  EXPECT_EQ(EditDistance("l", "lr"), 1);    // insertion
  EXPECT_EQ(EditDistance("window", "widow"), 1);
  EXPECT_EQ(EditDistance("arhc", "arch"), 1);  // adjacent swap
  EXPECT_EQ(EditDistance("trian", "train"), 1);
  EXPECT_EQ(EditDistance("Full", "full"), 0);  // ASCII case is ignored
  EXPECT_EQ(EditDistance("abc", "xyz"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
}

TEST(ClosestMatchTest, SuggestsOnlyCloseNames) {
  const std::vector<std::string> keys = {"arch", "window", "pos", "tokens", "seeds"};
  EXPECT_EQ(ClosestMatch("windw", keys), "window");
  EXPECT_EQ(ClosestMatch("seed", keys), "seeds");
  EXPECT_EQ(ClosestMatch("ps", keys), "pos");
  EXPECT_EQ(ClosestMatch("lr", keys), std::nullopt);    // 2 edits from "pos": too far for 2 letters
  EXPECT_EQ(ClosestMatch("arch", keys), std::nullopt);  // an exact match is no suggestion
  EXPECT_EQ(ClosestMatch("model.d_modle", {"model.d_model", "model.heads"}), "model.d_model");
  EXPECT_EQ(ClosestMatch("x", {}), std::nullopt);
}

TEST(ClosestMatchTest, PrefersTheNearestThenTheFirst) {
  EXPECT_EQ(ClosestMatch("full", {"fill", "full:3", "ful"}), "fill");
  EXPECT_EQ(ClosestMatch("abcd", {"abce", "abcf"}), "abce");
  EXPECT_EQ(ClosestMatch("train.lrr", {"train.lr_min", "train.lr"}), "train.lr");
}

TEST(DidYouMeanTest, FormatsASuffix) {
  EXPECT_EQ(DidYouMean("ful", {"full", "swa"}), " (did you mean full?)");
  EXPECT_EQ(DidYouMean("gdn", {"full", "swa"}), "");
}

}  // namespace
}  // namespace onset::base
