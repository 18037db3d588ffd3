"""A tiny study run once per test session with `onset run`, for the tests that read results.

Two architectures, two budgets each, under WSD: each architecture's budgets branch off one
trunk, so the database holds trunk rows (with metric points of their own) that no result may
show. About 6 s of training on two CPU cores.
"""

import os
import subprocess

NAME = "tiny"

STUDY = """\
name: tiny
description: two architectures, two budgets under WSD
tags: [test, tiny]
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 2, schedule: wsd, warmup_tokens: 1K,
        decay_fraction: 0.25}
data: {}
eval: {every_tokens: 2K, heldout_seqs: 2, niah_lengths: [48, 64], niah_samples: 2}
grid:
  arch: [full, "swa:1"]
  window: [16]
  pos: [rope]
  tokens: [4K, 8K]
  seeds: 1
"""


def run_study(onset, work):
    """Runs the study in `work` (study file and data directory `work/data`); returns the data
    directory. Fails the session's first test that needs it when the run does not succeed."""
    path = os.path.join(work, "tiny.yaml")
    with open(path, "w") as f:
        f.write(STUDY)
    data_dir = os.path.join(work, "data")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}
    result = subprocess.run([onset, "run", path, "--data-dir", data_dir, "--workers", "2",
                             "--no-results"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, stdin=subprocess.DEVNULL, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"onset run exited {result.returncode}:\n{result.stdout}\n"
                           f"{result.stderr}")
    return data_dir
