#!/usr/bin/env python3
"""The Hugging Face model's speed on long contexts: the chunked forward against the per-token
reference, generation with the cache against without, lm-eval and from_pretrained, on the
demo's model kinds.

    bench/hf/hf_speed.py --bin-dir build/bin [--models demo-df,demo-lf,demo-ff] [--reps 5]
        [--forward-tokens 4096] [--prompt-tokens 1024] [--new-tokens 32] [--load-reps 3]
        [--baseline-rev REV] [--lm-eval] [--lm-eval-reps 3] [--json OUT]
    bench/hf/hf_speed.py --export DIR ...      # an `onset-train export` directory instead

Each model is the demo study's cell (studies/demo.yaml: 2 layers of d_model 64, 2 heads,
seq_len 128, with the short convolution a study gives L and D layers), trained briefly with
onset-train (the timings do not depend on the weights), exported and converted with onset.hf.
Everything runs on the CPU, torch on one thread (lm-eval too), and each measurement is
repeated (--reps, --load-reps, --lm-eval-reps), the contenders interleaved and their order
rotated every repetition; it prints medians and the range.

  forward    logits of --forward-tokens positions (B = 1): the model's forward pass (fast.py)
             against reference.forward (reference.py, the per-token spec, what the model ran
             before), after checking they agree within 1e-4.
  generate   --new-tokens greedy tokens after a --prompt-tokens prompt: generate() with the
             cache against use_cache=False (the whole sequence every step); the tokens must be
             equal. With --baseline-rev, also the model directory that REV's onset.hf writes
             (its code and configs), as it generates by default.
  load       (the first model) a fresh Python process: importing torch and transformers,
             then from_pretrained (first call, which imports transformers' model machinery and
             the model's code, and a second one), for this code and with --baseline-rev REV's.
  lm-eval    (--lm-eval, the first model) wall time of `python -m lm_eval` on the onset_niah
             tasks of the demo's NIAH prompts (onset-train niah-prompts, then
             onset.lm_eval_task: 144 prompts of 64 to 256 tokens, one token each to decode),
             as docs/lm-eval.md runs it, and of it the time lm-eval spends answering the
             prompts (its generate_until); with --baseline-rev, REV's model directory too.

--baseline-rev REV (a git revision of this checkout, e.g. the commit before the cache) takes
REV's python/onset, converts the same export with it, and measures that directory beside this
one: the before and after of the same model.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

DEMO_MODEL = {"layers": 2, "d_model": 64, "heads": 2, "seq_len": 128, "pos": "rope",
              "short_conv": True}
DEMO_DATA = {"records_per_seq": 12, "key_len": 1, "value_len": 1, "min_distance": 4}
DEMO_EVAL = {"every_tokens": 131072, "heldout_seqs": 1, "niah_lengths": [64, 128, 256],
             "niah_depths": [0.1, 0.5, 0.9], "niah_samples": 16, "niah_variants": ["single"]}
MODELS = {"demo-df": "gdn:1", "demo-lf": "lightning:1", "demo-ff": "full"}
TRAIN_TOKENS = 131072  # 32 steps of the demo's 4,096-token batches


def run(cmd, env=None):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result.stdout


def child_env(python_dir=None):
    """One thread, offline, this run's HF_HOME; PYTHONPATH the onset package to use."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    if python_dir:
        env["PYTHONPATH"] = python_dir
    return env


def train_and_export(name, arch, trainer, work):
    """The demo cell of `arch`, trained TRAIN_TOKENS: (cell config path, checkpoint, export)."""
    config = {"model": {**DEMO_MODEL, "arch": arch},
              "train": {"tokens": TRAIN_TOKENS, "batch_tokens": 4096, "micro_batch": 32,
                        "lr": 3e-3, "answer_loss_weight": 16, "seed": 1, "threads": 1,
                        "log_every_steps": 8},
              "data": DEMO_DATA, "eval": DEMO_EVAL}
    config_path = os.path.join(work, name + ".json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    ckpt, export = os.path.join(work, name + "-ckpt"), os.path.join(work, name + "-export")
    run([trainer, "--config", config_path, "--checkpoint-dir", ckpt, "--threads", "1"])
    run([trainer, "export", "--config", config_path, "--checkpoint", ckpt, "--out", export])
    return config_path, ckpt, export


def baseline_code(rev, work):
    """REV's python/ directory, extracted from git into work/baseline-python."""
    out = os.path.join(work, "baseline")
    os.makedirs(out, exist_ok=True)
    archive = subprocess.run(["git", "-C", REPO, "archive", rev, "python/onset"],
                             stdout=subprocess.PIPE, check=True).stdout
    subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return os.path.join(out, "python")


def convert(export, out, python_dir):
    run([sys.executable, "-m", "onset.hf", export, out], env=child_env(python_dir))
    return out


def summary(seconds):
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds),
            "runs": seconds}


def interleaved(contenders, reps, warm_up=True):
    """{name: summary} of each function's wall time, timed in turn, the order rotated; with
    warm_up, after one untimed call of each (first calls build what later ones reuse)."""
    names = list(contenders)
    for name in names if warm_up else ():
        contenders[name]()
    times = {name: [] for name in names}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            start = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - start)
    return {name: summary(t) for name, t in times.items()}


def bench_forward(torch, model, export, T, reps):
    from onset import reference

    params, config = reference.load_export(export)
    tokens = torch.randint(0, 256, (1, T), generator=torch.Generator().manual_seed(0))
    tokens[0, 0] = 256  # <BOS>
    with torch.no_grad():
        fast = model(input_ids=tokens, use_cache=False).logits
        spec = reference.forward(params, config, tokens)
        diff = (fast - spec).abs().max().item()
        if diff > 1e-4:
            raise SystemExit(f"the model's logits differ from the reference's by {diff:.3g}")
        timed = interleaved({
            "fast": lambda: model(input_ids=tokens, use_cache=False),
            "reference": lambda: reference.forward(params, config, tokens)}, reps)
    timed["max_abs_logit_diff"] = diff
    return timed


def bench_generate(torch, models, prompt_tokens, new_tokens, reps):
    """models: {name: (model, generate kwargs)}; every one must give the same tokens."""
    prompt = torch.randint(0, 256, (1, prompt_tokens), generator=torch.Generator().manual_seed(1))
    prompt[0, 0] = 256
    outputs = {}

    def generate(name):
        model, kwargs = models[name]
        outputs[name] = model.generate(prompt, max_new_tokens=new_tokens, do_sample=False,
                                       **kwargs)

    timed = interleaved({name: (lambda n=name: generate(n)) for name in models}, reps)
    first = next(iter(outputs.values()))
    for name, out in outputs.items():
        if not torch.equal(out, first):
            raise SystemExit(f"generate ({name}) gave other tokens than {next(iter(outputs))}")
    timed["same_tokens"] = True
    return timed


LOAD_SCRIPT = """
import sys, time
t0 = time.perf_counter()
import torch
torch.set_num_threads(1)
import transformers
from transformers import GenerationMixin, PreTrainedModel
t1 = time.perf_counter()
transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True)
t2 = time.perf_counter()
transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def bench_load(directories, reps):
    """{name: {imports, first, second}} of from_pretrained in fresh processes, interleaved, each
    process timing itself (its start-up left out); the untimed first round fills the OS's file
    cache and is dropped."""
    results = {name: {"imports": [], "first": [], "second": []} for name in directories}

    def load(name):
        out = run([sys.executable, "-c", LOAD_SCRIPT, directories[name]], env=child_env())
        imports, first, second = map(float, out.split())
        for key, value in (("imports", imports), ("first", first), ("second", second)):
            results[name][key].append(value)

    interleaved({name: (lambda n=name: load(n)) for name in directories}, reps)
    return {name: {k: summary(v[1:]) for k, v in r.items()} for name, r in results.items()}


def lm_eval_tasks(trainer, config_path, ckpt, work):
    """The onset_niah task directory of the cell's prompts, and lm-eval's max_length."""
    prompts = os.path.join(work, "prompts.jsonl")
    run([trainer, "niah-prompts", "--config", config_path, "--out", prompts, "--checkpoint",
         ckpt, "--threads", "1"])
    tasks = os.path.join(work, "lm_eval")
    written = json.loads(run([sys.executable, "-m", "onset.lm_eval_task", prompts, tasks],
                             env=child_env(os.path.join(REPO, "python"))))
    return tasks, written["max_length"]


# `python -m lm_eval ARGS`, its answering of the prompts (HFLM.generate_until) timed apart and
# printed last: the rest of its wall time is start-up (imports), loading and bookkeeping.
LM_EVAL_SCRIPT = """
import runpy, sys, time
from lm_eval.models.huggingface import HFLM
answering = []
generate_until = HFLM.generate_until
def timed(self, *args, **kwargs):
    start = time.perf_counter()
    try:
        return generate_until(self, *args, **kwargs)
    finally:
        answering.append(time.perf_counter() - start)
HFLM.generate_until = timed
sys.argv = ["lm_eval"] + sys.argv[1:]
runpy.run_module("lm_eval", run_name="__main__")
print(sum(answering))
"""


def bench_lm_eval(directories, tasks, max_length, work, reps):
    """{name: {wall, answering}} of `python -m lm_eval` on the onset_niah tasks of the prompts
    of every length, per model directory."""
    answering = {name: [] for name in directories}

    def evaluate(name):
        out = os.path.join(work, "lm_eval_out", name)
        printed = run([sys.executable, "-c", LM_EVAL_SCRIPT, "--model", "hf", "--model_args",
                       f"pretrained={directories[name]},trust_remote_code=True,"
                       f"max_length={max_length}", "--include_path", tasks, "--tasks",
                       "onset_niah,onset_niah_extrapolation", "--batch_size", "1", "--device",
                       "cpu", "--output_path", out], env=child_env())
        answering[name].append(float(printed.split()[-1]))

    wall = interleaved({name: (lambda n=name: evaluate(n)) for name in directories}, reps,
                       warm_up=False)
    return {name: {"wall": wall[name], "answering": summary(answering[name])}
            for name in directories}


def fmt(s):
    unit, scale = ("s", 1.0) if s["median"] >= 1 else ("ms", 1e3)
    return (f"{s['median'] * scale:.3g} {unit} ({s['min'] * scale:.3g}-"
            f"{s['max'] * scale:.3g})")


def ratio(slow, fast):
    return f"{slow['median'] / fast['median']:.1f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    parser.add_argument("--models", default="demo-df,demo-lf,demo-ff")
    parser.add_argument("--export", help="an onset-train export directory instead of --models")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--forward-tokens", type=int, default=4096)
    parser.add_argument("--prompt-tokens", type=int, default=1024)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--baseline-rev", help="a git revision whose model code to measure too")
    parser.add_argument("--lm-eval", action="store_true",
                        help="time lm-eval on the first model's NIAH tasks")
    parser.add_argument("--lm-eval-reps", type=int, default=3)
    parser.add_argument("--load-reps", type=int, default=3)
    parser.add_argument("--json", help="write every measurement here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="onset_hf_speed_") as work:
        # Before transformers is imported: offline, and its files in `work`, as for the children.
        os.environ.update(child_env())
        os.environ["HF_HOME"] = os.path.join(work, "hf_home")
        measure(args, work)


def measure(args, work):
    import torch
    import transformers

    torch.set_num_threads(1)
    trainer = os.path.join(args.bin_dir, "onset-train")
    baseline_python = baseline_code(args.baseline_rev, work) if args.baseline_rev else None
    this_python = os.path.join(REPO, "python")
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[:3]
    print(f"load average before: {' '.join(load_before)}; torch {torch.__version__}, "
          f"transformers {transformers.__version__}, 1 thread", flush=True)

    if args.export:
        exports = {os.path.basename(os.path.normpath(args.export)): (None, None, args.export)}
    else:
        exports = {name: train_and_export(name, MODELS[name], trainer, work)
                   for name in args.models.split(",")}
    results = {}
    for index, (name, (config_path, ckpt, export)) in enumerate(exports.items()):
        directories = {"after": convert(export, os.path.join(work, f"hf_{index}_after"),
                                        this_python)}
        if baseline_python:
            directories["before"] = convert(export, os.path.join(work, f"hf_{index}_before"),
                                            baseline_python)
        model = transformers.AutoModelForCausalLM.from_pretrained(directories["after"],
                                                                  trust_remote_code=True)
        r = results[name] = {}
        r["forward"] = bench_forward(torch, model, export, args.forward_tokens, args.reps)
        f = r["forward"]
        print(f"{name}: forward of {args.forward_tokens} tokens: fast {fmt(f['fast'])}, "
              f"reference {fmt(f['reference'])}: {ratio(f['reference'], f['fast'])} "
              f"(logits within {f['max_abs_logit_diff']:.2g})", flush=True)

        contenders = {"cache": (model, {}), "no cache": (model, {"use_cache": False})}
        if baseline_python:
            old = transformers.AutoModelForCausalLM.from_pretrained(directories["before"],
                                                                    trust_remote_code=True)
            contenders["before"] = (old, {})
        r["generate"] = bench_generate(torch, contenders, args.prompt_tokens, args.new_tokens,
                                       args.reps)
        g = r["generate"]
        line = (f"{name}: {args.new_tokens} tokens after {args.prompt_tokens}: cache "
                f"{fmt(g['cache'])}, no cache {fmt(g['no cache'])}: "
                f"{ratio(g['no cache'], g['cache'])}")
        if baseline_python:
            line += f"; before {fmt(g['before'])}: {ratio(g['before'], g['cache'])}"
        print(line + " (same tokens)", flush=True)

        if index > 0:
            continue  # loading and lm-eval: the first model's (they hardly depend on the kind)
        r["load"] = bench_load(directories, args.load_reps)
        for which, load in r["load"].items():
            print(f"{name}: load ({which}): imports {fmt(load['imports'])}, from_pretrained "
                  f"first {fmt(load['first'])}, again {fmt(load['second'])}", flush=True)

        if args.lm_eval:
            if config_path is None:
                raise SystemExit("--lm-eval needs a trained model (--models), not --export")
            tasks, max_length = lm_eval_tasks(trainer, config_path, ckpt, work)
            r["lm_eval"] = bench_lm_eval(directories, tasks, max_length, work, args.lm_eval_reps)
            for which, e in r["lm_eval"].items():
                print(f"{name}: lm-eval ({which}): wall {fmt(e['wall'])}, of it answering the "
                      f"prompts {fmt(e['answering'])}", flush=True)
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[:3]
    print(f"load average after: {' '.join(load_after)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_before": load_before, "load_after": load_after,
                       "args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
