"""`onset export-model STUDY CELL --out DIR [--format hf]`: from a cell of a study that `onset
run` trained, the model of its newest recorded checkpoint, as onset-train's export and as a
Hugging Face directory whose logits equal onset-train's own on that checkpoint."""

import json
import os
import sqlite3
import subprocess

import pytest

import tiny_study

STUDY = tiny_study.NAME
TOKENS = [256, 257, 10, 20, 258, 30, 40, 50, 60, 70]


def branch_cells(data_dir):
    """Ids of the study's grid cells (WSD branches: not trunks), with their budgets and the
    tokens they trained (a step past the budget at most)."""
    db = sqlite3.connect(f"file:{os.path.join(data_dir, 'onset.db')}?mode=ro", uri=True)
    try:
        return db.execute("SELECT hash, tokens_budget, tokens_done FROM cells "
                          "WHERE role <> 'trunk' "
                          "ORDER BY id").fetchall()
    finally:
        db.close()


def export_model(onset, data_dir, cell, out, *extra):
    return subprocess.run([onset, "export-model", STUDY, cell, "--out", out, "--data-dir",
                           data_dir, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def test_the_newest_checkpoint_as_safetensors_and_as_transformers(
        study_data, onset_cli, onset_train, torch, transformers, tmp_path):
    cell, budget, trained = branch_cells(study_data)[0]
    plain = str(tmp_path / "plain")
    result = export_model(onset_cli, study_data, cell[:8], plain)  # a prefix names it
    assert result.returncode == 0, result.stderr
    with open(os.path.join(plain, "config.json")) as f:
        config = json.load(f)
    assert config["train"]["tokens"] == budget
    from onset.reference import read_safetensors

    _, metadata = read_safetensors(os.path.join(plain, "model.safetensors"))
    assert metadata["cell_id"] == cell
    # Its last checkpoint: the one at the end of its training.
    assert metadata["checkpoint"] == f"ckpt-{trained:012d}.pt"

    hf = str(tmp_path / "hf_model")
    result = export_model(onset_cli, study_data, cell, hf, "--format", "hf")
    assert result.returncode == 0, result.stderr
    model = transformers.AutoModelForCausalLM.from_pretrained(hf, trust_remote_code=True)
    with torch.no_grad():
        got = model(input_ids=torch.tensor([TOKENS])).logits[0]
    config_path = str(tmp_path / "cell.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    checkpoint = os.path.join(study_data, "checkpoints", STUDY, cell)
    dumped = subprocess.run([onset_train, "dump-logits", "--config", config_path,
                             "--checkpoint", checkpoint, "--tokens",
                             ",".join(map(str, TOKENS)), "--threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    want = torch.tensor(json.loads(dumped.stdout)["logits"])
    assert (got - want).abs().max().item() <= 1e-4


def test_errors_say_what_is_wrong(study_data, onset_cli, tmp_path):
    result = export_model(onset_cli, study_data, "ffffffffffffffff", str(tmp_path / "x"))
    assert result.returncode == 1 and "ffffffffffffffff" in result.stderr
    cell = branch_cells(study_data)[0][0]
    result = export_model(onset_cli, study_data, cell, str(tmp_path / "y"), "--checkpoint",
                          str(tmp_path / "nothing-here"))
    assert result.returncode == 1 and "nothing-here" in result.stderr
    assert not os.path.exists(tmp_path / "y" / "model.safetensors")
