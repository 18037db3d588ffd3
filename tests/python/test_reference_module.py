"""The command lines: `python -m onset.reference` prints the reference's logits as JSON, and
`python -m onset.hf` converts an export."""

import json
import os
import subprocess
import sys

from conftest import REPO


def python_module(*argv):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)


def test_reference_command(torch, models):
    from trained_models import TOKENS, TOLERANCE

    result = python_module("onset.reference", models.get("LLLF").export,
                           "--tokens", ",".join(map(str, TOKENS)))
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["tokens"] == TOKENS
    got = torch.tensor(printed["logits"])
    want = torch.tensor(models.dump_logits("LLLF"))
    assert (got - want).abs().max().item() <= TOLERANCE


def test_hf_command(tmp_path, torch, models):
    export = models.get("F").export
    out = str(tmp_path / "hf")
    result = python_module("onset.hf", export, out)
    assert result.returncode == 0, result.stderr
    assert os.path.isfile(os.path.join(out, "modeling_onset.py"))
    refused = python_module("onset.hf", str(tmp_path), str(tmp_path / "other"))
    assert refused.returncode == 1 and "onset.hf:" in refused.stderr
