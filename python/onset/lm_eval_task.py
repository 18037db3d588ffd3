"""An lm-evaluation-harness task of a cell's headline NIAH prompts (docs/lm-eval.md).

    python -m onset.lm_eval_task PROMPTS.jsonl OUT_DIR

PROMPTS.jsonl is what `onset-train niah-prompts` writes for a cell of the byte vocabulary (the
evaluator's own prompts; with --checkpoint also what onset decoded). OUT_DIR gets, for
`lm_eval --include_path OUT_DIR`:

    onset_niah.yaml                 the prompts of lengths <= the model's seq_len: its
                                    exact_match is the cell's niah/acc
    onset_niah_extrapolation.yaml   the longer ones (niah/extrapolation/acc), when there are any
    onset_niah_len<L>.yaml          the prompts of one length (niah/acc@<L>), tagged
                                    onset_niah_lengths
    onset_niah.py, prompts.jsonl    the tasks' code and data (the directory can move)

Each is a generate_until task: the prompt as it is (it starts with the BOS token, so lm-eval adds
none), greedy decoding of data.value_len tokens, no stop sequence of its own, and exact match
with the answer (onset_niah.py). It needs a model whose tokenizer reads the text of the byte
vocabulary: an `onset export-model --format hf` directory. Needs only the standard library.
"""

import argparse
import json
import os
import shutil
import sys

from . import onset_niah

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
TASK_CODE = "onset_niah.py"


def _task_yaml(name, value_len, part, length=None, tag=None):
    kwargs = f"  part: {part}\n" + (f"  length: {length}\n" if length is not None else "")
    return (
        f"task: {name}\n"
        + (f"tag: {tag}\n" if tag else "")
        + "custom_dataset: !function onset_niah.load\n"
        "dataset_kwargs:\n" + kwargs +
        "test_split: test\n"
        "output_type: generate_until\n"
        "doc_to_text: prompt\n"
        "doc_to_target: answer\n"
        "generation_kwargs:\n"
        "  until: []\n"
        f"  max_gen_toks: {value_len}\n"
        "  do_sample: false\n"
        "process_results: !function onset_niah.process_results\n"
        "metric_list:\n"
        "  - metric: exact_match\n"
        "    aggregation: mean\n"
        "    higher_is_better: true\n"
        "metadata:\n"
        "  version: 1.0\n")


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_task(prompts_path, out_dir):
    """Writes the task directory (above) for the prompts of `prompts_path`; returns a dict with
    the task names, the number of prompts and max_length (the longest prompt plus the answer,
    what lm-eval's max_length must be at least)."""
    docs = onset_niah.read_prompts(prompts_path)
    if not docs:
        raise ValueError(f"{prompts_path}: no prompts")
    if "prompt" not in docs[0]:
        raise ValueError(f"{prompts_path}: the prompts are ids only: the cell reads a token "
                         "file, whose text only the file's tokenizer knows, and its specials "
                         "are no text of it (docs/lm-eval.md says what runs on such models)")
    value_len = len(docs[0]["answer_ids"])
    if any(len(d["answer_ids"]) != value_len for d in docs):
        raise ValueError(f"{prompts_path}: answers of different lengths: not one cell's prompts")
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(prompts_path, os.path.join(out_dir, "prompts.jsonl.tmp"))
    os.replace(os.path.join(out_dir, "prompts.jsonl.tmp"), os.path.join(out_dir, "prompts.jsonl"))
    shutil.copyfile(os.path.join(PACKAGE_DIR, TASK_CODE), os.path.join(out_dir, TASK_CODE))
    tasks = []
    if any(d["in_length"] for d in docs):
        _write(os.path.join(out_dir, "onset_niah.yaml"),
               _task_yaml("onset_niah", value_len, "in_length"))
        tasks.append("onset_niah")
    if not all(d["in_length"] for d in docs):
        _write(os.path.join(out_dir, "onset_niah_extrapolation.yaml"),
               _task_yaml("onset_niah_extrapolation", value_len, "beyond"))
        tasks.append("onset_niah_extrapolation")
    for length in sorted({d["length"] for d in docs}):
        name = f"onset_niah_len{length}"
        _write(os.path.join(out_dir, name + ".yaml"),
               _task_yaml(name, value_len, "length", length, tag="onset_niah_lengths"))
        tasks.append(name)
    max_length = max(len(d["prompt_ids"]) for d in docs) + value_len
    return {"tasks": tasks, "prompts": len(docs), "max_length": max_length}


def main(argv):
    parser = argparse.ArgumentParser(
        prog="python -m onset.lm_eval_task",
        description="Turn `onset-train niah-prompts` output into lm-evaluation-harness tasks.")
    parser.add_argument("prompts", help="what `onset-train niah-prompts --out` wrote")
    parser.add_argument("out_dir", help="the task directory to write (lm_eval --include_path)")
    args = parser.parse_args(argv)
    try:
        written = write_task(args.prompts, args.out_dir)
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"onset.lm_eval_task: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"out": args.out_dir, **written}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
