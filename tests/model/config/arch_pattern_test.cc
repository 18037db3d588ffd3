#include "model/config/arch_pattern.h"

#include <gtest/gtest.h>

namespace onset::model {
namespace {

TEST(ArchPatternTest, RatioArchsAndExplicitPatternsResolve) {
  std::string p;
  EXPECT_FALSE(ResolvePattern("swa:3", 4, &p));
  EXPECT_EQ(p, "SSSF");
  EXPECT_FALSE(ResolvePattern("swa", 8, &p));
  EXPECT_EQ(p, "SSSFSSSF");
  EXPECT_FALSE(ResolvePattern("swa:1", 4, &p));
  EXPECT_EQ(p, "SFSF");
  EXPECT_FALSE(ResolvePattern("SF", 4, &p));
  EXPECT_EQ(p, "SFSF");
  EXPECT_TRUE(ResolvePattern("swa:3", 6, &p));  // a group of 4 does not divide 6
  EXPECT_TRUE(ResolvePattern("SXF", 3, &p));
}

TEST(ArchPatternTest, RecurrentPatternsResolve) {
  std::string p;
  EXPECT_FALSE(ResolvePattern("lightning:3", 4, &p));
  EXPECT_EQ(p, "LLLF");
  EXPECT_FALSE(ResolvePattern("lightning", 8, &p));
  EXPECT_EQ(p, "LLLFLLLF");
  EXPECT_FALSE(ResolvePattern("gdn", 4, &p, kFullFirst));
  EXPECT_EQ(p, "FDDD");
  EXPECT_FALSE(ResolvePattern("gdn:1", 4, &p, kFullLast));
  EXPECT_EQ(p, "DFDF");
  EXPECT_FALSE(ResolvePattern("swa:2", 6, &p, kFullFirst));
  EXPECT_EQ(p, "FSSFSS");
  // R = 0: no full-attention layer at all; full_position changes nothing.
  EXPECT_FALSE(ResolvePattern("lightning:0", 3, &p, kFullFirst));
  EXPECT_EQ(p, "LLL");
  EXPECT_FALSE(ResolvePattern("gdn:0", 2, &p));
  EXPECT_EQ(p, "DD");
  // Explicit patterns are taken as written, whatever full_position says.
  EXPECT_FALSE(ResolvePattern("LDSF", 8, &p, kFullFirst));
  EXPECT_EQ(p, "LDSFLDSF");
  EXPECT_EQ(ResolvePattern("gdn:x", 4, &p),
            "ratio in 'gdn:x' must be a non-negative integer, e.g. gdn:3 (gdn:0 = no "
            "full-attention layer)");
  const std::string empty_ratio = ResolvePattern("lightning:", 4, &p).value_or("");
  EXPECT_EQ(empty_ratio.rfind("ratio in 'lightning:' must", 0), 0u) << empty_ratio;
  EXPECT_EQ(ResolvePattern("LQF", 3, &p),
            "unknown arch 'LQF': expected full, swa[:R], lightning[:R], gdn[:R] or a pattern of "
            "F/S/L/D letters such as SSSF");
  EXPECT_EQ(ResolvePattern("gdn", 6, &p),
            "arch 'gdn' repeats a group of 4 layers, which does not divide model.layers = 6");
  EXPECT_EQ(ResolvePattern("gdn", 4, &p, "middle"),
            "unknown full_position 'middle': expected last or first");
}

TEST(ArchPatternTest, FullPositionMattersOnlyForRatioArchsWithAFullLayer) {
  EXPECT_TRUE(ArchUsesFullPosition("swa"));
  EXPECT_TRUE(ArchUsesFullPosition("gdn:1"));
  EXPECT_TRUE(ArchUsesFullPosition("lightning:12"));
  EXPECT_FALSE(ArchUsesFullPosition("swa:0"));
  EXPECT_FALSE(ArchUsesFullPosition("full"));
  EXPECT_FALSE(ArchUsesFullPosition("SSSF"));
  EXPECT_FALSE(ArchUsesFullPosition("gdn:x"));
}

TEST(ArchPatternTest, PositionalSchemes) {
  for (const char* pos :
       {"rope", "nope", "nope-full", "F:rope", "S:nope", "S:nope,F:rope", "F:nope,S:nope"}) {
    EXPECT_TRUE(IsKnownPos(pos)) << pos;
  }
  for (const char* pos :
       {"", "alibi", "F:nope,F:rope", "F=nope", "L:nope", "F:alibi", "F:nope,", "f:nope"}) {
    EXPECT_FALSE(IsKnownPos(pos)) << pos;
  }
  EXPECT_FALSE(IsExplicitPos("rope"));
  EXPECT_TRUE(IsExplicitPos("F:nope"));
}

TEST(ArchPatternTest, WhichKindsTakeRope) {
  EXPECT_TRUE(KindUsesRope(kFullAttention, kPosRope));
  EXPECT_TRUE(KindUsesRope(kSlidingWindow, kPosRope));
  EXPECT_FALSE(KindUsesRope(kFullAttention, kPosNopeFull));
  EXPECT_TRUE(KindUsesRope(kSlidingWindow, kPosNopeFull));
  EXPECT_FALSE(KindUsesRope(kFullAttention, kPosNope));
  EXPECT_FALSE(KindUsesRope(kSlidingWindow, kPosNope));
  // L and D layers never: their decay orders the past.
  for (const char* pos : {kPosRope, kPosNope, kPosNopeFull, "F:rope,S:rope"}) {
    EXPECT_FALSE(KindUsesRope(kLinearAttention, pos)) << pos;
    EXPECT_FALSE(KindUsesRope(kGatedDeltaNet, pos)) << pos;
  }
  // The explicit form: a type left out takes RoPE.
  EXPECT_FALSE(KindUsesRope(kSlidingWindow, "S:nope,F:rope"));
  EXPECT_TRUE(KindUsesRope(kFullAttention, "S:nope,F:rope"));
  EXPECT_TRUE(KindUsesRope(kSlidingWindow, "F:nope"));
}

TEST(ArchPatternTest, WhichKindsTakeLognScaling) {
  EXPECT_FALSE(KindUsesLogn(kFullAttention, kPosNope, kLognOff));
  EXPECT_TRUE(KindUsesLogn(kFullAttention, kPosNope, kLognFull));
  EXPECT_FALSE(KindUsesLogn(kSlidingWindow, kPosNope, kLognFull));
  EXPECT_TRUE(KindUsesLogn(kSlidingWindow, kPosNope, kLognAll));
  EXPECT_FALSE(KindUsesLogn(kFullAttention, kPosRope, kLognAll));  // RoPE layers never
  EXPECT_FALSE(KindUsesLogn(kGatedDeltaNet, kPosNope, kLognAll));
}

TEST(ArchPatternTest, SchemesThatPlaceRopeAlikeHaveOneName) {
  EXPECT_EQ(CanonicalPos("FFFF", kPosNopeFull), kPosNope);  // every layer is F
  EXPECT_EQ(CanonicalPos("SSSS", kPosNopeFull), kPosRope);  // no F layer
  EXPECT_EQ(CanonicalPos("DDDF", kPosNopeFull), kPosNope);  // only F could take RoPE
  EXPECT_EQ(CanonicalPos("DDDD", kPosNope), kPosRope);      // no attention layer at all
  EXPECT_EQ(CanonicalPos("SSSF", kPosNopeFull), kPosNopeFull);
  EXPECT_EQ(CanonicalPos("SSSF", "F:nope,S:rope"), kPosNopeFull);
  EXPECT_EQ(CanonicalPos("SSSF", "S:nope,F:rope"), "F:rope,S:nope");
  EXPECT_EQ(CanonicalPos("SSSF", "S:rope"), kPosRope);
}

TEST(ArchPatternTest, LognScalingThatNamesNoLayerIsOff) {
  EXPECT_EQ(CanonicalLognScaling("FFFF", kPosRope, kLognFull), kLognOff);
  EXPECT_EQ(CanonicalLognScaling("FFFF", kPosNope, kLognAll), kLognFull);  // F layers only
  EXPECT_EQ(CanonicalLognScaling("SSSF", "F:rope,S:nope", kLognFull), kLognOff);
  EXPECT_EQ(CanonicalLognScaling("SSSF", "F:rope,S:nope", kLognAll), kLognAll);
  EXPECT_EQ(CanonicalLognScaling("SSSF", kPosNope, kLognAll), kLognAll);
  EXPECT_EQ(CanonicalLognScaling("SSSF", kPosNope, kLognOff), kLognOff);
}

}  // namespace
}  // namespace onset::model
