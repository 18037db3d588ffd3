// The kernels' tile plan (kernels/swa_tiles.h), checked on the host: every (query, key) pair in
// the window is covered by exactly the tiles the kernels visit, and the work is O(T * W).
#include "kernels/swa_tiles.h"

#include <gtest/gtest.h>

namespace onset::kernels {
namespace {

// Brute force: which key tiles hold a key that some query of the tile attends.
TileRange NeededKeyTiles(int64_t q_tile, int64_t bq, int64_t bk, int64_t T, int64_t w) {
  int64_t first = -1, last = -1;
  for (int64_t i = q_tile * bq; i < std::min(T, (q_tile + 1) * bq); ++i) {
    for (int64_t j = 0; j < T; ++j) {
      if (!Attends(i, j, w)) continue;
      if (first < 0 || j / bk < first) first = j / bk;
      last = std::max(last, j / bk + 1);
    }
  }
  return {first, last};
}

TEST(SwaTilesTest, TheVisitedTilesAreExactlyTheNeededOnes) {
  for (int64_t T : {1, 7, 32, 33, 100, 257}) {
    for (int64_t w : {0, 1, 5, 32, 33, 64, 300}) {
      for (int64_t bq : {16, 32}) {
        const int64_t bk = 32;
        for (int64_t qt = 0; qt * bq < T; ++qt) {
          const TileRange got = KeyTilesFor(qt, bq, bk, T, w);
          const TileRange want = NeededKeyTiles(qt, bq, bk, T, w);
          EXPECT_EQ(got.first, want.first) << "T " << T << " w " << w << " qt " << qt;
          EXPECT_EQ(got.last, want.last) << "T " << T << " w " << w << " qt " << qt;
        }
        // The backward's view: key tile kt is visited by query tile qt iff qt visits kt.
        for (int64_t kt = 0; kt * bk < T; ++kt) {
          const TileRange queries = QueryTilesFor(kt, bk, bq, T, w);
          for (int64_t qt = 0; qt * bq < T; ++qt) {
            const TileRange keys = KeyTilesFor(qt, bq, bk, T, w);
            const bool forward_visits = kt >= keys.first && kt < keys.last;
            const bool backward_visits = qt >= queries.first && qt < queries.last;
            EXPECT_EQ(forward_visits, backward_visits)
                << "T " << T << " w " << w << " kt " << kt << " qt " << qt;
          }
        }
      }
    }
  }
}

TEST(SwaTilesTest, WorkGrowsWithTheWindowNotTheSquareOfTheLength) {
  auto pairs = [](int64_t T, int64_t w) {
    int64_t n = 0;
    for (int64_t qt = 0; qt * 32 < T; ++qt) {
      const TileRange r = KeyTilesFor(qt, 32, 32, T, w);
      n += r.last - r.first;
    }
    return n;
  };
  // 32K tokens, window 512: each query tile meets at most 512/32 + 1 = 17 key tiles.
  EXPECT_LE(pairs(32768, 512), 1024 * 17);
  EXPECT_EQ(pairs(32768, 0), 1024 * 1025 / 2);  // full causal: the triangle
  EXPECT_LT(pairs(32768, 512) * 25, pairs(32768, 0));
}

}  // namespace
}  // namespace onset::kernels
