// The kernels' tile plan (kernels/swa_tiles.h), checked on the host: every (query, key) pair in
// the window is covered by exactly the tiles the kernels visit, and the work is O(T * W); and
// the GPU checks' cases (swa_check_cases.h) reach the rows that split a warp in the forward.
#include "kernels/swa_tiles.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "kernels/swa_check_cases.h"

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
  for (int64_t T : {1, 7, 32, 33, 100, 127, 257, 511}) {
    for (int64_t w : {0, 1, 5, 32, 33, 64, 100, 300}) {
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

// Where the rows of one warp of the forward kernel part ways, as that kernel tiles the work
// (swa_attention.cu: 32 query rows by 32 keys, 4 lanes a row, so 8 rows a warp). A row "sees" a
// key tile once any key up to the tile's end is in its window (its running max is finite): in a
// warp where some rows see and others do not, the kernel's per-row branch splits the warp.
struct Divergence {
  bool window = false;  // rows below T apart: a tile reaches some rows' windows but not others'
  bool past_t = false;  // rows past T (which see nothing) beside rows that see
};

Divergence ForwardDivergence(int64_t T, int64_t w) {
  constexpr int64_t kTile = 32, kRowsPerWarp = 8;
  Divergence out;
  for (int64_t qt = 0; qt * kTile < T; ++qt) {
    const TileRange keys = KeyTilesFor(qt, kTile, kTile, T, w);
    for (int64_t kt = keys.first; kt < keys.last; ++kt) {
      for (int64_t r0 = 0; r0 < kTile; r0 += kRowsPerWarp) {
        int seeing = 0, valid_rows = 0, valid_seeing = 0;
        for (int64_t r = r0; r < r0 + kRowsPerWarp; ++r) {
          const int64_t i = qt * kTile + r;
          bool sees = false;
          for (int64_t j = keys.first * kTile; j < std::min(T, (kt + 1) * kTile) && i < T; ++j)
            sees = sees || Attends(i, j, w);
          seeing += sees;
          valid_rows += i < T;
          valid_seeing += i < T && sees;
        }
        if (valid_seeing > 0 && valid_seeing < valid_rows) out.window = true;
        if (seeing > 0 && valid_rows < kRowsPerWarp) out.past_t = true;
      }
    }
  }
  return out;
}

// The GPU checks (kernels/swa_check_cases.h) keep exercising both ways a warp splits, for
// both head dimensions, with windows that are not a multiple of the tile and lengths that are
// not a multiple of it among them; and their names (T, D, window, G) stay distinct.
TEST(SwaCheckCasesTest, TheGpuChecksReachRowsThatPartWaysInsideAWarp) {
  EXPECT_TRUE(ForwardDivergence(127, 5).window);  // the witness itself, on a known case
  EXPECT_TRUE(ForwardDivergence(127, 5).past_t);
  EXPECT_FALSE(ForwardDivergence(128, 0).window);  // full causal over whole warps: no split
  EXPECT_FALSE(ForwardDivergence(128, 0).past_t);
  EXPECT_FALSE(ForwardDivergence(256, 33).window);  // each query tile starts on a key tile
  EXPECT_FALSE(ForwardDivergence(1000, 0).past_t);  // 1000 % 8 == 0: whole warps past T
  std::set<int64_t> window_split, past_t_split;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> names;
  int long_windowed = 0;
  for (const CheckCase& c : kCheckCases) {
    EXPECT_TRUE(names.insert({c.T, c.D, c.window, c.G}).second) << "T " << c.T << " w " << c.window;
    EXPECT_EQ(c.H % c.G, 0);
    const Divergence d = ForwardDivergence(c.T, c.window);
    if (d.window) window_split.insert(c.D);
    if (d.past_t) past_t_split.insert(c.D);
    // Several windowed tiles: the window ends inside a tile, and T spans 4 windows and more.
    if (d.window && c.window % 32 != 0 && c.T >= 4 * c.window + 64) ++long_windowed;
  }
  EXPECT_EQ(window_split, (std::set<int64_t>{64, 128}));
  EXPECT_EQ(past_t_split, (std::set<int64_t>{64, 128}));
  EXPECT_GE(long_windowed, 4);
  for (int64_t T : {127, 255, 511, 1000}) {
    bool found = false;
    for (const CheckCase& c : kCheckCases) found = found || (c.T == T && c.window % 32 != 0);
    EXPECT_TRUE(found) << "no windowed case at T " << T;
  }
}

}  // namespace
}  // namespace onset::kernels
