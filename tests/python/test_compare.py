"""Results.compare: `onset compare ... --json`, run by the CLI on the data directory."""

import json
import subprocess

import pytest

import tiny_study

STUDY = tiny_study.NAME


def test_equals_the_command(pandas, study_data, onset_cli):
    import onset

    results = onset.open(study_data, onset_bin=onset_cli)
    got = results.compare(STUDY, metric="eval/heldout_loss", threshold=5.3,
                          by="arch", baseline="arch=full", direction="down")
    printed = subprocess.run(
        [onset_cli, "compare", STUDY, "--data-dir", study_data, "--metric", "eval/heldout_loss",
         "--threshold", "5.3", "--by", "arch", "--baseline", "arch=full", "--direction",
         "down", "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        check=True).stdout
    assert got == json.loads(printed)
    assert got["direction"] == "down" and got["by"] == ["arch"]


def test_binary_from_the_environment(pandas, study_data, onset_cli, monkeypatch):
    import onset

    monkeypatch.setenv("ONSET_BIN", onset_cli)
    monkeypatch.setenv("ONSET_COORDINATOR", "127.0.0.1:1")  # not used: the data directory is
    got = onset.open(study_data).compare(STUDY, metric="train/loss", threshold=5.2)
    assert {g["axes"]["arch"] for g in got["groups"]} == {"full", "swa:1"}


def test_refusal(pandas, study_data, onset_cli):
    import onset

    with pytest.raises(onset.OnsetCommandError) as refused:
        onset.open(study_data, onset_bin=onset_cli).compare(
            STUDY, metric="train/loss", threshold=1, direction="sideways")
    assert refused.value.returncode == 2 and "direction" in refused.value.stderr


def test_no_binary(pandas, study_data, monkeypatch):
    import onset

    monkeypatch.delenv("ONSET_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(FileNotFoundError, match="ONSET_BIN"):
        onset.open(study_data).compare(STUDY, metric="train/loss", threshold=1)
