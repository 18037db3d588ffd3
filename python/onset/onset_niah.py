"""The code of the onset_niah tasks for lm-evaluation-harness: the prompts a directory written by
onset.lm_eval_task holds (prompts.jsonl beside this file), and their score.

lm-eval imports this file from the task directory (`custom_dataset: !function onset_niah.load`,
`process_results: !function onset_niah.process_results` in the YAML files), so the directory
can move: it finds its prompts next to itself. Needs nothing but the standard library and
`datasets`, which lm-eval brings.
"""

import json
import os

PROMPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prompts.jsonl")


def read_prompts(path=PROMPTS):
    """Every prompt of the file, in its order (as `onset-train niah-prompts` wrote them)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def select(docs, part, length=None):
    """The prompts of one task: "in_length" (length <= the model's seq_len: niah/acc), "beyond"
    (longer: niah/extrapolation/acc) or "length" (those of `length`: niah/acc@<length>)."""
    if part == "in_length":
        return [d for d in docs if d["in_length"]]
    if part == "beyond":
        return [d for d in docs if not d["in_length"]]
    if part == "length":
        return [d for d in docs if d["length"] == int(length)]
    raise ValueError(f"onset_niah: unknown part {part!r}: in_length, beyond or length")


def load(part="in_length", length=None, **_):
    """lm-eval's custom_dataset: {"test": the task's prompts as a datasets.Dataset}."""
    import datasets

    docs = select(read_prompts(), part, length)
    if not docs:
        raise ValueError(f"onset_niah: {PROMPTS} holds no prompt of part {part!r}"
                         + (f" and length {length}" if length is not None else ""))
    return {"test": datasets.Dataset.from_list(docs)}


def process_results(doc, results):
    """Exact match of the decoded text with the answer, as niah/acc counts a prompt. Each token of
    the byte vocabulary is one character, the answer is data.value_len bytes and at most as many
    tokens are decoded, so equal texts are equal tokens; a decoded special or padding row (which
    lm-eval's decoding leaves out) leaves the text too short. Compared as Python strings, not
    NumPy arrays, which would ignore a trailing NUL byte."""
    return {"exact_match": float(results[0] == doc["answer"])}
