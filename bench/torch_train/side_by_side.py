#!/usr/bin/env python3
"""onset-train against the same model and algorithm in PyTorch, eager and torch.compile, side by
side: training tokens per second of forward, backward and optimiser step.

    bench/torch_train/side_by_side.py --bin-dir build/bin [--models demo-ff,demo-df,ff-d256]
        [--reps 5] [--steps 30] [--warmup 5] [--threads 1] [--device cpu|cuda] [--json OUT]
        [--sdpa-control] [--no-compile]

For each model:

1. The same function first. onset-train trains one step and exports its checkpoint; onset-train
   dump-logits prints its logits on a sequence; the PyTorch contender (contender.py, the
   chunkwise algorithms of onset's model/nn/) loads the export and must give the same logits
   within 1e-4 and the same cross-entropy within 1e-5, else the benchmark stops.
2. The same work. Every contender trains with the cell's settings: micro-batches of
   train.micro_batch sequences of seq_len tokens, train.batch_tokens per step, the loss weighted
   by train.answer_loss_weight on one target in eleven (the demo data's share of answer
   tokens), gradients clipped to train.grad_clip, AdamW (beta1, beta2, eps 1e-8, weight decay
   on the matrices that are not embeddings or norm gains, the trainer's split), the learning
   rate set every step. PyTorch uses its fastest AdamW (fused=True); its batches are generated
   before timing (onset's synthetic data is generated on the training thread and counted).
3. Timed interleaved: each repetition runs onset-train (a process; its own per-step timer,
   train/tokens_per_second, after `--warmup` steps), then eager, then compiled PyTorch (in this
   process, after their warm-up), the order rotated every repetition. torch.compile's warm-up
   (compilation) is reported apart and excluded.

Prints per model the median tokens/s of each contender with its min-max over repetitions and
the ratios of the medians. --sdpa-control adds onset-train with its attention through SDPA, the
contenders' kernel (--attention-backend sdpa-band), to the interleaving: how much of the lead is
onset's attention kernel and how much the rest. On --device cuda every contender trains in bf16
autocast (train.precision bf16), as onset does there.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

from contender import ContenderModel  # noqa: E402
from onset.network import init_module  # noqa: E402
from onset.reference import load_export  # noqa: E402

DEMO_TRAIN = {"lr": 3e-3, "schedule": "wsd", "answer_loss_weight": 16, "batch_tokens": 4096,
              "micro_batch": 32}
DEMO_DATA = {"records_per_seq": 12, "key_len": 1, "value_len": 1, "min_distance": 4}

# The models of the comparison: the demo's FF and DF cells and a larger full-attention model.
MODELS = {
    "demo-ff": {"model": {"layers": 2, "d_model": 64, "heads": 2, "seq_len": 128,
                          "arch": "full", "pos": "rope"},
                "train": DEMO_TRAIN, "data": DEMO_DATA},
    "demo-df": {"model": {"layers": 2, "d_model": 64, "heads": 2, "seq_len": 128,
                          "arch": "gdn:1", "pos": "rope"},
                "train": DEMO_TRAIN, "data": DEMO_DATA},
    "ff-d256": {"model": {"layers": 4, "d_model": 256, "heads": 4, "seq_len": 512,
                          "arch": "full", "pos": "rope"},
                "train": {**DEMO_TRAIN, "micro_batch": 8}, "data": DEMO_DATA},
}
ANSWER_SHARE = 1 / 11  # the demo stream's answer targets, about 9%


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result.stdout


def cell_config(name, steps, threads, device):
    """The cell config onset-train trains: `steps` steps, one evaluation (at the end)."""
    base = MODELS[name]
    train = dict(base["train"])
    tokens = steps * train["batch_tokens"]
    train.update({"tokens": tokens, "warmup_tokens": max(1, tokens // 10), "threads": threads,
                  "log_every_steps": 1, "checkpoint_every_tokens": 0, "seed": 0})
    if device == "cuda":
        train["precision"] = "bf16"
    return {"model": dict(base["model"]), "train": train, "data": dict(base["data"]),
            "eval": {"every_tokens": tokens, "heldout_seqs": 1, "niah_lengths": [base["model"]["seq_len"]],
                     "niah_depths": [0.5], "niah_samples": 1}}


def check_same_function(name, trainer, work):
    """onset-train's logits of a sequence against the contender's on onset's exported weights."""
    config_path = os.path.join(work, name + "-check.json")
    with open(config_path, "w") as f:
        json.dump(cell_config(name, 1, 1, "cpu"), f)
    ckpt, out = os.path.join(work, name + "-ckpt"), os.path.join(work, name + "-export")
    run([trainer, "--config", config_path, "--checkpoint-dir", ckpt, "--threads", "1",
         "--device", "cpu"])
    run([trainer, "export", "--config", config_path, "--checkpoint", ckpt, "--out", out])
    params, config = load_export(out)
    T = config["model"]["seq_len"]
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 256, (T,), generator=g).tolist()
    dumped = json.loads(run([trainer, "dump-logits", "--config", config_path, "--checkpoint", ckpt,
                             "--tokens", ",".join(map(str, tokens)), "--threads", "1"]))
    want = torch.tensor(dumped["logits"], dtype=torch.float32)               # (T, V)
    model = ContenderModel(config)
    model.load_state_dict(params, strict=True)
    with torch.no_grad():
        got = model(torch.tensor([tokens]))[0]                              # (T, V)
    diff = (got - want).abs().max().item()
    target = torch.tensor(tokens[1:])
    loss_diff = abs(F.cross_entropy(got[:-1], target).item() -
                    F.cross_entropy(want[:-1], target).item())
    print(f"{name}: same function: max |logit diff| {diff:.2e}, |loss diff| {loss_diff:.2e} "
          f"(onset-train's checkpoint, {T} tokens)", flush=True)
    if diff > 1e-4 or loss_diff > 1e-5:
        raise SystemExit(f"{name}: the contender does not compute onset's model; not timing it")
    return config


def onset_rep(name, trainer, work, warmup, steps, threads, device, attention="auto"):
    """onset-train's tokens/s over `steps` steps after `warmup`, by its own step timer, its F and
    S layers through `attention` (an --attention-backend)."""
    config_path = os.path.join(work, f"{name}-time.json")
    with open(config_path, "w") as f:
        json.dump(cell_config(name, warmup + steps, threads, device), f)
    out = run([trainer, "--config", config_path, "--threads", str(threads), "--device", device,
               "--attention-backend", attention, "--metrics-fd", "1",
               "--checkpoint-dir", os.path.join(work, f"{name}-time-ckpt")])
    rates = []
    for line in out.splitlines():
        event = json.loads(line)
        if event.get("event") == "train" and "train/tokens_per_second" in event["metrics"]:
            rates.append(event["metrics"]["train/tokens_per_second"])
    timed = rates[warmup:]
    if len(timed) < steps:
        raise SystemExit(f"{name}: onset-train reported {len(rates)} steps, wanted {warmup + steps}")
    return len(timed) / sum(1 / r for r in timed)  # every step has the same tokens


class TorchTrainer:
    """The cell's training step in PyTorch, on one model (eager or compiled)."""

    def __init__(self, config, compiled, device):
        model_cfg, train = config["model"], config["train"]
        torch.manual_seed(0)
        self.model = ContenderModel(config).to(device)
        for module in self.model.modules():
            init_module(module, model_cfg.get("init_std", 0.02))
        self.run = torch.compile(self.model) if compiled else self.model
        decay, no_decay = [], []
        for pname, p in self.model.named_parameters():
            embedding = pname.startswith(("wte.", "lm_head."))
            (decay if p.dim() >= 2 and not embedding and "norm" not in pname else no_decay).append(p)
        betas = (train["beta1"], train["beta2"])
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": train["weight_decay"]},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=train["lr"], betas=betas, eps=1e-8, fused=True)
        self.clip = train["grad_clip"]
        self.lr = train["lr"]
        self.device = device
        self.bf16 = device == "cuda"
        T = model_cfg["seq_len"]
        self.seqs = max(1, train["batch_tokens"] // T)
        self.micro = train["micro_batch"]
        self.tokens_per_step = self.seqs * T
        g = torch.Generator().manual_seed(2)
        self.batch = torch.randint(0, 256, (self.seqs, T + 1), generator=g).to(device)   # (S, T+1)
        answers = torch.rand(self.seqs, T, generator=g) < ANSWER_SHARE
        weight = train["answer_loss_weight"]
        self.weights = torch.where(answers, float(weight), 1.0).to(device)               # (S, T)

    def step(self):
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr  # set every step, as onset's schedule does
        self.optimizer.zero_grad(set_to_none=True)
        for start in range(0, self.seqs, self.micro):
            n = min(self.micro, self.seqs - start)
            b = self.batch[start:start + n]
            x, y = b[:, :-1], b[:, 1:]                                            # (n, T)
            w = self.weights[start:start + n].reshape(-1)                         # (n T)
            with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.bf16):
                logits = self.run(x)                                              # (n, T, V)
                per_target = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(),
                                             y.reshape(-1), reduction="none")     # (n T)
                objective = (per_target * w).sum() / w.sum()
            (objective * (n / self.seqs)).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.optimizer.step()

    def sync(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def timed(self, steps):
        self.sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            self.step()
        self.sync()
        return self.tokens_per_step * steps / (time.perf_counter() - t0)


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "values": values}


def fmt(s):
    return f"{s['median'] / 1e3:.2f}K ({s['min'] / 1e3:.2f}-{s['max'] / 1e3:.2f}K)"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default="build/bin", help="where onset-train is")
    parser.add_argument("--models", default="demo-ff,demo-df,ff-d256",
                        help="comma-separated: " + ", ".join(MODELS))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30, help="timed steps per repetition")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--no-compile", action="store_true",
                        help="leave torch.compile out (a quick check of the rest)")
    parser.add_argument("--sdpa-control", action="store_true",
                        help="also time onset-train with SDPA attention, the contenders' kernel "
                             "(--attention-backend sdpa-band): how much of the lead is attention")
    args = parser.parse_args(argv)
    trainer = os.path.join(args.bin_dir, "onset-train")
    if not os.access(trainer, os.X_OK):
        raise SystemExit(f"--bin-dir: no onset-train in {args.bin_dir} (build it first)")
    names = [m for m in args.models.split(",") if m]
    for m in names:
        if m not in MODELS:
            raise SystemExit(f"--models: unknown model {m!r}; known: {', '.join(MODELS)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU")
    torch.set_num_threads(args.threads)
    results = {}
    with tempfile.TemporaryDirectory(prefix="onset-side-by-side-") as work:
        for name in names:
            config = check_same_function(name, trainer, work)
            config["train"].update(cell_config(name, 1, args.threads, args.device)["train"])
            contenders = {"eager": TorchTrainer(config, False, args.device)}
            compile_warmup = 0.0
            if not args.no_compile:
                contenders["compile"] = TorchTrainer(config, True, args.device)
                t0 = time.perf_counter()
                for _ in range(args.warmup):
                    contenders["compile"].step()
                contenders["compile"].sync()
                compile_warmup = time.perf_counter() - t0
            for _ in range(args.warmup):
                contenders["eager"].step()
            order = ["onset", *(["onset-sdpa"] if args.sdpa_control else []), *contenders]
            rates = {who: [] for who in order}
            for rep in range(args.reps):
                for who in order[rep % len(order):] + order[:rep % len(order)]:
                    if who in ("onset", "onset-sdpa"):
                        rate = onset_rep(name, trainer, work, args.warmup, args.steps,
                                         args.threads, args.device,
                                         "sdpa-band" if who == "onset-sdpa" else "auto")
                    else:
                        rate = contenders[who].timed(args.steps)
                    rates[who].append(rate)
                print(f"{name} rep {rep + 1}: " +
                      ", ".join(f"{w} {rates[w][-1] / 1e3:.2f}K" for w in order), flush=True)
            s = {w: summary(v) for w, v in rates.items()}
            results[name] = {
                "tokens_per_second": s,
                "onset_over_eager": s["onset"]["median"] / s["eager"]["median"],
                "onset_over_compile": (s["onset"]["median"] / s["compile"]["median"]
                                       if "compile" in s else None),
                "onset_sdpa_over_eager": (s["onset-sdpa"]["median"] / s["eager"]["median"]
                                          if "onset-sdpa" in s else None),
                "compile_warmup_seconds": compile_warmup,
                "threads": args.threads, "device": args.device, "steps": args.steps,
                "reps": args.reps, "tokens_per_step": contenders["eager"].tokens_per_step}
    print("\n| model | onset-train | PyTorch eager | torch.compile | onset / eager | "
          "onset / compile |\n|---|---|---|---|---|---|")
    for name, r in results.items():
        s = r["tokens_per_second"]
        compiled = (f"{fmt(s['compile'])} | ", f"{r['onset_over_compile']:.2f}x") \
            if "compile" in s else ("- | ", "-")
        print(f"| {name} | {fmt(s['onset'])} | {fmt(s['eager'])} | {compiled[0]}"
              f"{r['onset_over_eager']:.2f}x | {compiled[1]} |")
    for name, r in results.items():
        if r["onset_sdpa_over_eager"] is not None:
            print(f"control, {name}: onset-train with SDPA attention "
                  f"{fmt(r['tokens_per_second']['onset-sdpa'])}, "
                  f"{r['onset_sdpa_over_eager']:.2f}x eager")
    print(f"\ntokens/s of forward, backward and optimiser step: medians of {args.reps} interleaved "
          f"repetitions of {args.steps} steps (min-max), {args.threads} thread(s), "
          f"{args.device}; torch.compile's warm-up excluded: " +
          ", ".join(f"{n} {r['compile_warmup_seconds']:.0f} s" for n, r in results.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
