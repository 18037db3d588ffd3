// The needle-in-a-haystack tasks (docs/metrics.md, "NIAH: the headline is multi-key"), torch-free.
// Every task is asked in rounds: the prompt ends with the first question `<Q> key <A>`; the model
// greedily decodes m = data.value_len tokens; for each later round the decoder appends those m
// tokens and the round's `<Q> key <A>` and decodes m more. Records are `<K> key <V> value` as in
// training.
//
//   multi-key    THE HEADLINE TASK (niah/acc...): the needle plus `records` - 1 distractor
//                records with other keys; one round asking the needle's key. Score: exact match
//                of every value token (0 or 1). Copying "the value after some <V>" without
//                matching the key scores about 1 / records over depths.
//   control      `records` records, none with the asked key: there is nothing to retrieve, so
//                decoding some record's value exactly is copying without matching
//                (niah/control/distractor_copy_rate). No score; see CopiedRecordValue.
//   single       one record, one round: "copy the only value" solves it without matching the
//                key or using positions, so it is a variant (niah/single/...), not the headline.
//   multi-value  `records` records with the same key and distinct values; as many rounds, each
//                asking that key again. A value is recovered when some round decoded it exactly.
//                Score: recovered values / records.
//   multi-query  `records` records with distinct keys; one round per record, asked in placement
//                order of `needles`. Score: rounds answered exactly / rounds.
//
// The first record (the needle; for the control the first distractor) sits at the requested
// depth; the others go into the free stretches before and after it, each stretch chosen with
// probability proportional to its length (within its capacity), so distractors are spread over
// the whole haystack. No two records overlap, and none overlaps the final question. Keys are
// distinct (but in multi-value), and so are values.
#pragma once

#include <string>
#include <vector>

#include "model/data/synthetic_data.h"

namespace onset::model {

enum class NiahVariant { kSingle, kMultiKey, kMultiValue, kMultiQuery, kControl };

// "single", "multi-key", "multi-value", "multi-query", "control"; throws std::invalid_argument on
// anything else.
NiahVariant ParseNiahVariant(const std::string& name);

struct NiahTask {
  NiahVariant variant = NiahVariant::kSingle;
  std::vector<Token> prompt;                 // ends with round 0's <Q> key <A>
  std::vector<std::vector<Token>> suffixes;  // rounds 1..: the <Q> key <A> to append
  std::vector<std::vector<Token>> answers;   // per round the value asked (multi-value: the
                                             // values in placement order, any round may hold
                                             // any); empty for the control
  std::vector<RecordSpan> needles;           // records asked about; needles[0] at the depth
                                             // (query_pos / answer_pos: round 0's question)
  std::vector<RecordSpan> distractors;       // records not asked about (multi-key, control)
  std::vector<std::vector<Token>> values;    // the value of every record in the prompt
  int rounds() const { return 1 + static_cast<int>(suffixes.size()); }
};

// `records` (>= 1) is the number of records of every variant but single (which has one).
// Requires length >= MinNiahTaskLength(data, variant, records); throws std::invalid_argument
// otherwise, or when the record alphabet cannot give `records` distinct keys or values.
NiahTask MakeNiahTask(const SyntheticData& data, NiahVariant variant, int length, double depth,
                      int records, Rng* rng);
int MinNiahTaskLength(const SyntheticData& data, NiahVariant variant, int records);

// The task's score in [0, 1] from the m tokens decoded in each round ([round][token]). Throws
// std::invalid_argument for the control (it has no answer) or a wrong number of rounds.
double ScoreNiahTask(const NiahTask& task, const std::vector<std::vector<Token>>& decoded);

// Whether `decoded` (one round's m tokens) is exactly the value of some record of the prompt.
bool CopiedRecordValue(const NiahTask& task, const std::vector<Token>& decoded);

// The key-swap control of a multi-key task (niah/control/key_swap_rate): the same prompt, the
// question asking for the key of distractor `distractor` (an index into task.distractors)
// instead of the needle's. A model that matches keys answers it with that distractor's value,
// one that copies some value regardless of the key gives the same answer as to the original.
// `key_len` is data.key_len. Throws std::invalid_argument for a task without such a distractor.
std::vector<Token> KeySwapPrompt(const NiahTask& task, size_t distractor, int key_len);

}  // namespace onset::model
