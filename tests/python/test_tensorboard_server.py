"""What a person sees in TensorBoard itself: `tensorboard --logdir DIR` in its default mode (the
fast data server reads the files, as it does for everyone who installs tensorboard), asked
through its own HTTP API, the one its dashboard reads. Every cell's scalars equal what
`onset export --format jsonl` prints (values rounded to float32 once), after an export and live,
while `onset run --tensorboard DIR` runs the study."""

import json
import os
import struct
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

import servers
import tiny_study

WAIT_S = 90


def get(url, path, **params):
    query = urllib.parse.urlencode(params)
    with urllib.request.urlopen(f"{url}{path}{'?' + query if query else ''}", timeout=30) as r:
        return json.loads(r.read())


def post(url, path, body):
    request = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read())


def float32(value):
    return struct.unpack("f", struct.pack("f", value))[0]


def jsonl_rows(onset, data_dir, study):
    out = subprocess.run([onset, "export", study, "--format", "jsonl", "--data-dir", data_dir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def expected_view(rows):
    """run name -> tag -> [(step, wall time, value)], as TensorBoard should serve them."""
    view = {}
    for row in rows:
        axes = row["axes"]
        group = ",".join(f"{k}={v}" for k, v in sorted(axes.items()) if k != "seed")
        run = f"{group}/seed={axes['seed']},id={row['cell_id']}"
        value = float("nan") if row["value"] is None else float32(row["value"])
        view.setdefault(run, {}).setdefault(row["metric"], []).append(
            (row["tokens"], row["at_unix_ms"] / 1000.0, value))
    return view


def served_view(url):
    """The same, read from TensorBoard's scalars API."""
    view = {}
    for run, tags in get(url, "/data/plugin/scalars/tags").items():
        for tag in tags:
            points = get(url, "/data/plugin/scalars/scalars", run=run, tag=tag)
            view.setdefault(run, {})[tag] = [(step, wall, value) for wall, step, value in points]
    return view


def same(served, expected):
    if served.keys() != expected.keys():
        return False
    for run, tags in expected.items():
        if served[run].keys() != tags.keys():
            return False
        for tag, points in tags.items():
            got = served[run][tag]
            if len(got) != len(points):
                return False
            for (step, wall, value), (e_step, e_wall, e_value) in zip(got, points):
                if step != e_step or abs(wall - e_wall) > 1e-3:
                    return False
                if not (value == e_value or (value != value and e_value != e_value)):
                    return False
    return True


def wait_until_served(url, expected, log):
    deadline = time.monotonic() + WAIT_S
    served = {}
    while time.monotonic() < deadline:
        served = served_view(url)
        if same(served, expected):
            return served
        time.sleep(0.5)
    runs = {r: {t: len(p) for t, p in tags.items()} for r, tags in served.items()}
    want = {r: {t: len(p) for t, p in tags.items()} for r, tags in expected.items()}
    pytest.fail(f"TensorBoard serves {runs}\nexpected {want}\nits log:\n{log()}")


def assert_default_loader(log):
    # The fast data server, not the slow Python loader that --load_fast=false would pick.
    assert "fast data loading" in log(), log()


def sessions(url):
    groups = post(url, "/data/plugin/hparams/session_groups", {
        "experimentName": "", "startIndex": 0, "sliceSize": 1000, "colParams": [],
        "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                            "STATUS_RUNNING"]})
    return {s["name"]: (g["name"], s.get("status"))
            for g in groups.get("sessionGroups", []) for s in g["sessions"]}


def test_an_export_shows_in_tensorboards_default_view(study_data, onset_cli, tmp_path):
    out = str(tmp_path / "tb")
    subprocess.run([onset_cli, "export", tiny_study.NAME, "--format", "tensorboard", "--out",
                    out, "--data-dir", study_data], check=True, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE)
    expected = expected_view(jsonl_rows(onset_cli, study_data, tiny_study.NAME))
    assert expected
    with servers.tensorboard(out) as (url, log):
        wait_until_served(url, expected, log)
        assert_default_loader(log)
        # The text dashboard: each run's cell, its config included.
        texts = get(url, "/data/plugin/text/tags")
        assert set(texts) == set(expected) and all(t == ["cell"] for t in texts.values())
        # The hparams dashboard: one session per cell, a group per variant.
        found = sessions(url)
        assert set(found) == set(expected)
        for run, (group, _) in found.items():
            assert group == f"{tiny_study.NAME}/{run.split('/')[0]}"


LIVE_STUDY = """\
name: live
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 2}
data: {}
eval: {every_tokens: 8K, heldout_seqs: 2, niah_lengths: [64], niah_samples: 2}
grid:
  arch: [full, "swa:1"]
  window: [16]
  pos: [rope]
  tokens: [48K]
  seeds: 1
"""


def held_trainer(onset_train, tmp_path):
    """A trainer that trains as onset-train does, then holds its cell running until the file
    it returns exists: the test sees the study while it runs, however fast the machine."""
    release = tmp_path / "release"
    script = tmp_path / "held-trainer"
    script.write_text(f"""#!/bin/sh
"{onset_train}" "$@"
rc=$?
while [ ! -e "{release}" ]; do sleep 0.1; done
exit $rc
""")
    script.chmod(0o755)
    return str(script), release


def test_a_running_study_shows_in_tensorboard_as_its_points_arrive(onset_cli, onset_train,
                                                                   tmp_path):
    study = tmp_path / "live.yaml"
    study.write_text(LIVE_STUDY)
    data_dir = str(tmp_path / "data")
    out = str(tmp_path / "tb")
    os.makedirs(out)
    trainer, release = held_trainer(onset_train, tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}
    with servers.tensorboard(out) as (url, log):
        run = subprocess.Popen([onset_cli, "run", str(study), "--data-dir", data_dir,
                                "--workers", "2", "--no-results", "--tensorboard", out,
                                "--trainer", trainer],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               stdin=subprocess.DEVNULL, env=env)
        try:
            # Every point in TensorBoard while the cells still run: no export was made.
            deadline = time.monotonic() + WAIT_S
            while True:
                try:
                    expected = expected_view(jsonl_rows(onset_cli, data_dir, "live"))
                except subprocess.CalledProcessError:  # not submitted yet
                    expected = {}
                if len(expected) == 2 and all(
                        any(p[0] == 48000 for p in tags.get("train/loss", []))
                        for tags in expected.values()):
                    break  # both trainers are done and held
                assert run.poll() is None, run.stderr.read()
                assert time.monotonic() < deadline, "the trainers did not finish"
                time.sleep(0.5)
            wait_until_served(url, expected, log)
            assert_default_loader(log)
            assert run.poll() is None
            # Each run an hparams session from its first point on, still running.
            assert set(sessions(url)) == set(expected)
            release.write_text("")
            _, stderr = run.communicate(timeout=300)
            assert run.returncode == 0, stderr
        finally:
            release.write_text("")
            if run.poll() is None:
                run.kill()
                run.wait()
        # At the end: every point as the database holds it, and every session ended well.
        assert expected_view(jsonl_rows(onset_cli, data_dir, "live")) == expected
        deadline = time.monotonic() + WAIT_S
        while {status for _, status in sessions(url).values()} != {"STATUS_SUCCESS"}:
            assert time.monotonic() < deadline, sessions(url)
            time.sleep(0.5)
