"""`onset export STUDY --format tensorboard --out DIR`, read back with TensorBoard's own reader
(the tensorboard package's event accumulator): one run per cell, named by its axes and id, and
every point's step (tokens) and wall time equal to what `onset export --format jsonl` prints of
the same study, its value that one rounded to float32; the cell's config as text.
test_tensorboard_server.py reads the same through TensorBoard's own server."""

import json
import os
import struct
import subprocess

import pytest

import tiny_study

STUDY = tiny_study.NAME


@pytest.fixture(scope="module")
def event_accumulator():
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator

    return event_accumulator


def export_jsonl(onset, data_dir):
    out = subprocess.run([onset, "export", STUDY, "--format", "jsonl", "--data-dir", data_dir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def export_tensorboard(onset, data_dir, out):
    return subprocess.run([onset, "export", STUDY, "--format", "tensorboard", "--out", out,
                           "--data-dir", data_dir], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def read_runs(event_accumulator, root):
    """run directory (relative to root) -> loaded EventAccumulator, every event kept."""
    runs = {}
    for directory, _, files in os.walk(root):
        if any("tfevents" in f for f in files):
            acc = event_accumulator.EventAccumulator(
                directory, size_guidance={event_accumulator.TENSORS: 0})
            acc.Reload()
            runs[os.path.relpath(directory, root)] = acc
    return runs


def scalar(tensor_event):
    from tensorboard.util import tensor_util

    return tensor_util.make_ndarray(tensor_event.tensor_proto).item()


def test_every_point_reads_back_as_onset_export_prints_it(event_accumulator, study_data,
                                                          onset_cli, tmp_path):
    rows = export_jsonl(onset_cli, study_data)
    assert rows, "the tiny study has points"
    out = str(tmp_path / "tb")
    result = export_tensorboard(onset_cli, study_data, out)
    assert result.returncode == 0, result.stderr
    runs = read_runs(event_accumulator, out)
    cells = {}
    for row in rows:
        cells.setdefault(row["cell_id"], row["axes"])
    assert len(runs) == len(cells)
    # Each run: GROUP (the axes but the seed) / LEAF (seed and id).
    run_of = {}
    for run in runs:
        group, leaf = run.split(os.sep)
        cell_id = leaf.split("id=")[1]
        axes = cells[cell_id]
        assert group == ",".join(f"{k}={v}" for k, v in sorted(axes.items()) if k != "seed")
        assert leaf == f"seed={axes['seed']},id={cell_id}"
        run_of[cell_id] = runs[run]
    expected = {}
    for row in rows:
        expected.setdefault((row["cell_id"], row["metric"]), []).append(row)
    seen = 0
    for (cell_id, metric), points in expected.items():
        events = run_of[cell_id].Tensors(metric)
        assert [e.step for e in events] == [p["tokens"] for p in points], (cell_id, metric)
        for event, point in zip(events, points):
            value = scalar(event)
            if point["value"] is None:
                assert value != value, (cell_id, metric, point)  # NaN
            else:
                # float32, the scalar TensorBoard's default loader serves: the stored value
                # rounded once.
                assert value == struct.unpack("f", struct.pack("f", point["value"]))[0], (
                    cell_id, metric, point)
            assert point["at_unix_ms"] is not None
            assert event.wall_time == point["at_unix_ms"] / 1000.0
            seen += 1
    assert seen == len(rows)
    # Nothing but the exported metrics and the cell's text.
    for cell_id, acc in run_of.items():
        tags = set(acc.Tags()["tensors"])
        assert tags == {m for (c, m) in expected if c == cell_id} | {
            "cell", "_hparams_/session_start_info"}
        text = acc.Tensors("cell")[0].tensor_proto.string_val[0].decode()
        assert f"cell `{cell_id}`" in text and '"model"' in text, text


def test_a_second_export_replaces_the_first(event_accumulator, study_data, onset_cli, tmp_path):
    out = str(tmp_path / "tb")
    for _ in range(2):
        assert export_tensorboard(onset_cli, study_data, out).returncode == 0
    for directory, _, files in os.walk(out):
        assert len([f for f in files if "tfevents" in f]) <= 1, (directory, files)


def test_without_out_it_says_what_to_give(study_data, onset_cli):
    result = subprocess.run([onset_cli, "export", STUDY, "--format", "tensorboard",
                             "--data-dir", study_data], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert result.returncode != 0
    assert "--out DIR" in result.stderr
