// The trainer's vocabulary: the 256 byte values, then a few special tokens.
//
// Token ids 0..255 are bytes (the synthetic background and the record keys and values are
// bytes too). The specials follow; the embedding table is padded to a multiple of 8 rows
// so matrix shapes stay friendly to vectorised kernels. Padding rows are never produced by
// the data and the model learns to give them negligible probability.
#pragma once

#include <cstdint>

namespace onset::model {

using Token = int32_t;

inline constexpr Token kNumByteTokens = 256;
inline constexpr Token kBos = 256;  // start of every sequence
inline constexpr Token kKey = 257;  // <K>: a record's key follows
inline constexpr Token kVal = 258;  // <V>: the record's value follows
inline constexpr Token kQry = 259;  // <Q>: a query's key follows
inline constexpr Token kAns = 260;  // <A>: the queried value follows
inline constexpr Token kNumTokens = 261;
inline constexpr Token kVocabSize = (kNumTokens + 7) / 8 * 8;  // 264

static_assert(kVocabSize % 8 == 0 && kVocabSize >= kNumTokens);

inline constexpr bool IsByteToken(Token t) { return t >= 0 && t < kNumByteTokens; }

}  // namespace onset::model
