// "Did you mean ...?": the known name closest to a misspelt one, for error messages about
// unknown keys and values.
//
// Closeness is the optimal-string-alignment edit distance (insertions, deletions,
// substitutions and swaps of two adjacent characters each count 1), ignoring ASCII case. A
// candidate counts as close when it is at most 1 edit away for words of up to 3 characters, 2
// for up to 6 and 3 beyond, so short names do not suggest unrelated ones.
//
// Header-only: the study-file parser (coordinator/study/study_file.cc) and the cell config
// (model/config/cell_config.cc, which the trainer builds too) both use it.
#pragma once

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onset::base {

// The optimal-string-alignment distance between `a` and `b`, ignoring ASCII case.
inline int EditDistance(std::string_view a, std::string_view b) {
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  };
  const size_t n = a.size();
  const size_t m = b.size();
  // d[i][j]: distance between the first i characters of a and the first j of b.
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// The candidate closest to `word` if one is close enough (see above); the first of equally
// close ones. Never `word` itself: an exact match is not a suggestion.
inline std::optional<std::string> ClosestMatch(std::string_view word,
                                               const std::vector<std::string>& candidates) {
  const int limit = word.size() <= 3 ? 1 : word.size() <= 6 ? 2 : 3;
  std::optional<std::string> best;
  int best_distance = limit + 1;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    const int distance = EditDistance(word, c);
    if (distance < best_distance) {
      best = c;
      best_distance = distance;
    }
  }
  return best;
}

// " (did you mean X?)" for the closest candidate, or "" when none is close: for appending to a
// message.
inline std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> match = ClosestMatch(word, candidates);
  return match ? " (did you mean " + *match + "?)" : "";
}

}  // namespace onset::base
