"""The CLI's defaults, through the real `onset` on the tiny study as a person types them:
compare without --metric or --threshold, a metric the study lacks, a baseline no cell has."""

import json
import statistics
import subprocess

import tiny_study

STUDY = tiny_study.NAME


def onset(onset_cli, data_dir, *args):
    return subprocess.run([onset_cli, *args, "--data-dir", data_dir], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def test_compare_without_metric_or_threshold_uses_the_headline_and_says_so(study_data,
                                                                          onset_cli):
    chosen = onset(onset_cli, study_data, "compare", STUDY, "--json")
    assert chosen.returncode == 0, chosen.stderr
    assert "metric niah/acc: the study's headline" in chosen.stderr
    assert "threshold 0.5: for a rate" in chosen.stderr
    explicit = onset(onset_cli, study_data, "compare", STUDY, "--metric", "niah/acc",
                     "--threshold", "0.5", "--json")
    assert explicit.returncode == 0, explicit.stderr
    assert json.loads(chosen.stdout) == json.loads(explicit.stdout)


def test_a_loss_opens_halfway_between_the_median_first_and_last_values(study_data, onset_cli):
    rows = [json.loads(line) for line in onset(
        onset_cli, study_data, "export", STUDY, "--format", "jsonl", "--metrics",
        "train/loss").stdout.splitlines()]
    curves = {}
    for row in rows:
        curves.setdefault(row["cell_id"], []).append((row["tokens"], row["value"]))
    firsts = [min(c)[1] for c in curves.values()]
    lasts = [max(c)[1] for c in curves.values()]
    expected = float(f"{(statistics.median(firsts) + statistics.median(lasts)) / 2:.3g}")
    result = onset(onset_cli, study_data, "compare", STUDY, "--metric", "train/loss", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["threshold"] == expected
    assert f"threshold {expected:g}: halfway" in result.stderr


def test_a_metric_the_study_lacks_lists_those_it_has(study_data, onset_cli):
    result = onset(onset_cli, study_data, "compare", STUDY, "--metric", "niah/acc@4096",
                   "--threshold", "0.5")
    assert result.returncode == 1
    assert "has reported niah/acc@4096" in result.stderr
    listed = result.stderr.split("its metrics: ", 1)[1].strip().split(", ")
    assert "train/loss" in listed and "niah/acc@64" in listed and listed == sorted(listed)


def test_a_baseline_no_cell_has_is_refused_naming_the_values(study_data, onset_cli):
    result = onset(onset_cli, study_data, "compare", STUDY, "--metric", "train/loss",
                   "--threshold", "5", "--baseline", "arch=nope")
    assert result.returncode == 2
    assert "--baseline: no cell of study tiny has arch=nope (its values: full, swa:1)" in \
        result.stderr
    assert result.stdout == ""
