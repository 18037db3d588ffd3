#!/usr/bin/env python3
"""The export's proof: for each kind of model, train a tiny one with onset-train, export it,
and check that onset.reference (python/onset/reference.py) - plain PyTorch, built from
config.json and model.safetensors alone - reproduces onset-train's own logits (dump-logits)
within 1e-4.

    export_test.py --bin-dir BUILD/bin --python-dir SOURCE/python

Exits 77 (CTest's skip) when torch cannot be imported. KINDS, TOKENS, cell(), train_and_export()
and dump_logits() are shared with the Python package's tests (tests/python), which check the
package's models against the same kinds.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import warnings

# torch warns once that it has no NumPy; nothing here uses it.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
try:
    import torch
except ImportError:
    print("SKIP: no torch in", sys.executable)
    sys.exit(77)

TOLERANCE = 1e-4

# Long enough for several S windows and L/D chunks (chunk_size 8 below), starting at <BOS>.
TOKENS = [256, 257, 10, 20, 258, 30, 40, 50] + list(range(60, 76)) + [259, 10, 20, 260]

BASE_MODEL = {"layers": 4, "d_model": 32, "heads": 4, "seq_len": 32, "chunk_size": 8}

# name -> model overrides. Together they cover every mixer, RoPE and NoPE layers, window
# masks, GQA, QK-norm on and off, tied and separate output matrices, log-n scaling, and the
# short convolution on the default layers, on none and on every kind.
KINDS = {
    "F": {"arch": "full"},
    "SSSF-w8": {"arch": "swa", "window": 8},
    "LLLF": {"arch": "lightning", "qk_norm": False},
    "DDDF": {"arch": "gdn"},
    # The recurrent mixers with their short convolution (a study's default), and with it on
    # every layer.
    "LDDF-conv": {"arch": "LDDF", "short_conv": True},
    "SLDF-conv-everywhere": {"arch": "SLDF", "window": 8, "short_conv": "FSLD",
                             "short_conv_kernel": 3},
    "GQA-kv1": {"arch": "swa", "window": 8, "kv_heads": 1, "tie_embeddings": False},
    "nope-full": {"arch": "swa", "window": 8, "pos": "nope-full"},
    # RoPE in F, NoPE in S, and log-n scaling there too ("all"; "full" would leave S layers
    # alone): seq_len 16 puts the last 12 tokens beyond it.
    "F-rope-S-nope-logn": {"arch": "swa", "window": 8, "pos": "F:rope,S:nope",
                           "logn_scaling": "all", "seq_len": 16},
    # NoPE everywhere with the default log-n scaling: F layers only.
    "nope-logn-full": {"arch": "swa", "window": 8, "pos": "nope", "logn_scaling": True,
                       "seq_len": 16},
}


def cell(model_overrides):
    return {
        "model": {**BASE_MODEL, **model_overrides},
        "train": {"tokens": 2048, "batch_tokens": 512, "micro_batch": 8, "seed": 1,
                  "log_every_steps": 2, "threads": 1},
        "eval": {"every_tokens": 2048, "heldout_seqs": 1, "niah_lengths": [48],
                 "niah_depths": [0.5], "niah_samples": 1},
    }


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def train_and_export(name, overrides, trainer, work):
    """Trains the tiny model of one kind in `work` and exports it: returns the paths of its cell
    config, its checkpoint directory and its export directory (NAME.json, NAME-ckpt,
    NAME-export)."""
    config_path = os.path.join(work, name + ".json")
    with open(config_path, "w") as f:
        json.dump(cell(overrides), f)
    ckpt_dir = os.path.join(work, name + "-ckpt")
    out_dir = os.path.join(work, name + "-export")
    run([trainer, "--config", config_path, "--checkpoint-dir", ckpt_dir, "--threads", "1"])
    run([trainer, "export", "--config", config_path, "--checkpoint", ckpt_dir, "--out", out_dir])
    return config_path, ckpt_dir, out_dir


def dump_logits(trainer, config_path, ckpt_dir, tokens=TOKENS):
    """onset-train dump-logits of one sequence: {"checkpoint", "tokens", "logits" (T x V)}."""
    return json.loads(run([trainer, "dump-logits", "--config", config_path, "--checkpoint",
                           ckpt_dir, "--tokens", ",".join(map(str, tokens)), "--threads", "1"]))


def check_kind(name, overrides, trainer, reference, work):
    config_path, ckpt_dir, out_dir = train_and_export(name, overrides, trainer, work)
    dumped = dump_logits(trainer, config_path, ckpt_dir)
    want = torch.tensor(dumped["logits"], dtype=torch.float32)                # (T, V)

    params, config = reference.load_export(out_dir)
    with torch.no_grad():
        got = reference.forward(params, config, torch.tensor([TOKENS]))[0]    # (T, V)
    assert got.shape == want.shape, f"{name}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    diff = (got - want).abs().max().item()

    # The export names its cell the way the coordinator does and carries the canonical config.
    _, metadata = reference.read_safetensors(os.path.join(out_dir, "model.safetensors"))
    canonical = json.dumps(config, separators=(",", ":"), sort_keys=True)
    assert metadata["config"] == canonical, f"{name}: metadata config differs from config.json"
    assert metadata["cell_id"] == hashlib.sha256(canonical.encode()).hexdigest()[:16], name
    assert metadata["format_version"] == "1", name
    # The trained weights, not the initial ones: dump-logits and the export read one checkpoint.
    assert dumped["checkpoint"].endswith(metadata["checkpoint"]), name
    return diff


def check_bf16(trainer, reference, work):
    """--dtype bf16 stores the float32 export's weights rounded to bfloat16."""
    name = "SSSF-w8"
    config_path = os.path.join(work, name + ".json")
    bf16_dir = os.path.join(work, name + "-bf16")
    ckpt_dir = os.path.join(work, name + "-ckpt")
    run([trainer, "export", "--config", config_path, "--checkpoint", ckpt_dir, "--out", bf16_dir,
         "--dtype", "bf16"])
    f32, _ = reference.read_safetensors(os.path.join(work, name + "-export", "model.safetensors"))
    bf16, _ = reference.read_safetensors(os.path.join(bf16_dir, "model.safetensors"))
    assert f32.keys() == bf16.keys()
    for key in f32:
        assert bf16[key].dtype == torch.bfloat16, key
        assert torch.equal(bf16[key], f32[key].to(torch.bfloat16)), key


def check_refusals(trainer, work):
    """A config of another model, or a directory without checkpoints, is a usage error (2)."""
    cases = [
        ("F-ckpt", "SSSF-w8.json", "different model"),
        ("no-such-ckpt", "F.json", "no-such-ckpt"),
    ]
    os.makedirs(os.path.join(work, "empty-ckpt"))
    cases.append(("empty-ckpt", "F.json", "no valid checkpoint"))
    for ckpt, config, message in cases:
        result = subprocess.run(
            [trainer, "export", "--config", os.path.join(work, config), "--checkpoint",
             os.path.join(work, ckpt), "--out", os.path.join(work, "refused")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert result.returncode == 2, f"{ckpt} with {config}: exit {result.returncode}"
        assert message in result.stderr, result.stderr
        assert not os.path.exists(os.path.join(work, "refused")), "nothing written"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True,
                        help="the directory that holds the onset package (SOURCE/python)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sys.dont_write_bytecode = True  # keep the source tree clean
    sys.path.insert(0, args.python_dir)
    from onset import reference

    trainer = os.path.join(args.bin_dir, "onset-train")
    failures = []
    with tempfile.TemporaryDirectory(prefix="onset_export_test_") as work:
        for name, overrides in KINDS.items():
            diff = check_kind(name, overrides, trainer, reference, work)
            verdict = "ok" if diff <= TOLERANCE else "FAIL"
            print(f"{name:10s} max |logit diff| = {diff:.3g}  {verdict}")
            if diff > TOLERANCE:
                failures.append(name)
        check_bf16(trainer, reference, work)
        print("bf16 export ok")
        check_refusals(trainer, work)
        print("refusals ok")
    if failures:
        print("logits differ beyond", TOLERANCE, "for:", ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
