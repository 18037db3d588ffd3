// The headline NIAH prompts of a cell, as JSON lines for harnesses outside onset (`onset-train
// niah-prompts`; docs/lm-eval.md turns them into an lm-evaluation-harness task). They are the
// evaluator's own prompts (evaluator.h): a pure function of the cell's data and eval sections,
// the same at every eval point, so a model exported at any checkpoint can be scored on exactly
// the prompts its niah/acc was measured on.
//
// One object per prompt, in the evaluator's order (length, then depth, then sample):
//   length, depth, sample   where the prompt sits in the grid of eval.niah_lengths x
//                           eval.niah_depths x eval.niah_samples
//   in_length               length <= model.seq_len: niah/acc averages these; the others make
//                           niah/extrapolation/acc
//   distance                positions from the needle's first value token to the one that
//                           predicts the answer's first token (niah/acc_in_window splits by it)
//   prompt_ids, answer_ids  the prompt (from <BOS> through the question's <A>) and the
//                           data.value_len tokens an exact answer decodes
//   prompt, answer          the same as text, for the byte vocabulary only (vocab.h: byte b is
//                           U+0000 + b, specials by name)
// With a model (a checkpoint), also what onset's greedy decoder answers, as niah/acc scores it:
//   onset_answer_ids, onset_answer (byte vocabulary), onset_correct
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config/vocab.h"
#include "model/evaluation/evaluator.h"

namespace onset::model {

// The text of `ids` in the byte vocabulary (UTF-8): byte b as U+0000 + b, the specials and the
// padding rows by name (vocab.h). Throws std::invalid_argument for an id outside the padded
// vocabulary.
std::string ByteVocabText(const std::vector<Token>& ids);

// The record of task `task` of headline group `group`. `text`: add the text fields (byte
// vocabulary). `decoded` (may be null): the m tokens onset decoded for it.
nlohmann::json NiahPromptRecord(const Evaluator::TaskGroup& group, size_t task, bool text,
                                const std::vector<Token>* decoded);

}  // namespace onset::model
