// RULER-style NIAH variants (SCIENCE.md, "Measurements"), torch-free. Every task is asked in
// rounds: the prompt ends with the first question `<Q> key <A>`; the model greedily decodes
// m = data.value_len tokens; for each later round the decoder appends those m tokens and the
// round's `<Q> key <A>` and decodes m more. Records are `<K> key <V> value` as in training.
//
//   single       one record, one round (SyntheticData::Niah's layout).
//   multi-key    the needle plus kVariantRecords - 1 distractor records with other keys; one
//                round asking the needle's key. Score: exact match (0 or 1).
//   multi-value  kVariantRecords records with the same key and distinct values; as many rounds,
//                each asking that key again. A value is recovered when some round decoded it
//                exactly. Score: recovered values / kVariantRecords.
//   multi-query  kVariantRecords records with distinct keys; one round per record, asked in
//                placement order of `needles`. Score: rounds answered exactly / rounds.
//
// The first needle sits at the requested depth (SyntheticData::Niah's rule); the others are
// spread at random over the free stretches beside it. No two records overlap, and none
// overlaps the final question.
#pragma once

#include <string>
#include <vector>

#include "model/synthetic_data.h"

namespace onset::model {

enum class NiahVariant { kSingle, kMultiKey, kMultiValue, kMultiQuery };

// "single", "multi-key", "multi-value", "multi-query" (EvalConfig::niah_variants); throws
// std::invalid_argument on anything else.
NiahVariant ParseNiahVariant(const std::string& name);

inline constexpr int kVariantRecords = 3;

struct NiahTask {
  NiahVariant variant = NiahVariant::kSingle;
  std::vector<Token> prompt;                 // ends with round 0's <Q> key <A>
  std::vector<std::vector<Token>> suffixes;  // rounds 1..: the <Q> key <A> to append
  std::vector<std::vector<Token>> answers;   // per round the value asked (multi-value: the
                                             // values in placement order, any round may hold any)
  std::vector<RecordSpan> needles;           // records asked about; needles[0] at the depth
                                             // (query_pos / answer_pos: round 0's question)
  std::vector<RecordSpan> distractors;       // multi-key only
  int rounds() const { return static_cast<int>(answers.size()); }
};

// Requires length >= MinNiahTaskLength(data, variant); throws std::invalid_argument otherwise.
NiahTask MakeNiahTask(const SyntheticData& data, NiahVariant variant, int length, double depth,
                      Rng* rng);
int MinNiahTaskLength(const SyntheticData& data, NiahVariant variant);

// The task's score in [0, 1] from the m tokens decoded in each round ([round][token]).
double ScoreNiahTask(const NiahTask& task, const std::vector<std::vector<Token>>& decoded);

}  // namespace onset::model
