"""onsetd's live MLflow mirror against a real tracking server: `mlflow server` started on
loopback from the pinned MLflow of its own venv (python/requirements-mlflow.txt), the runs read
back with MLflow's own client. Each cell is one run of its study's experiment with its axes and
config as params, every point with step = tokens and its timestamp, its final state as the
run's status; a study stopped part-way and run again continues the same runs, no point twice."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

import test_tensorboard_server as live

STUDY = "mirrored"
START_TIMEOUT_S = 240  # MLflow creates its tables at first start: about a minute on a busy CI

STUDY_FILE = live.LIVE_STUDY.replace("name: live", f"name: {STUDY}")

# Run with MLflow's Python: every run of the experiment, its params, tags, status and the whole
# history of every metric.
READ_RUNS = r"""
import json, math, sys
import mlflow
client = mlflow.MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
runs = []
if experiment is not None:
    for run in client.search_runs([experiment.experiment_id], max_results=1000):
        history = {}
        for key in run.data.metrics:
            history[key] = [[m.step, m.timestamp, None if math.isnan(m.value) else m.value]
                            for m in client.get_metric_history(run.info.run_id, key)]
        runs.append({"name": run.info.run_name, "status": run.info.status,
                     "end_time": run.info.end_time, "tags": run.data.tags,
                     "params": run.data.params, "history": history})
print(json.dumps(runs))
"""


def mlflow_python():
    python = os.environ.get("ONSET_MLFLOW_PYTHON") or os.path.expanduser(
        "~/.cache/onset/mlflow-venv/bin/python")
    if not os.access(python, os.X_OK):
        pytest.skip(f"no {python} (ONSET_SETUP_FOR_TESTS=1 scripts/setup makes it)")
    return python


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The tracking server's URL."""
    python = mlflow_python()
    work = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    log = open(work / "server.log", "w")
    process = subprocess.Popen(
        [os.path.join(os.path.dirname(python), "mlflow"), "server", "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1", "--backend-store-uri",
         f"sqlite:///{work}/mlflow.db", "--default-artifact-root", str(work / "artifacts")],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(work))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start:\n{(work / 'server.log').read_text()}")
            time.sleep(1)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def read_runs(url, study):
    result = subprocess.run([mlflow_python(), "-c", READ_RUNS, url, study],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def mlflow_key(metric):
    return metric.replace("@", "_at_")


def expected_runs(onset_cli, data_dir):
    """cell id -> MLflow key -> [[step, timestamp, value]], from the database."""
    expected = {}
    for row in live.jsonl_rows(onset_cli, data_dir, STUDY):
        expected.setdefault(row["cell_id"], {}).setdefault(mlflow_key(row["metric"]), []).append(
            [row["tokens"], row["at_unix_ms"], row["value"]])
    return expected


def describes_the_machine(metric):
    """base/metric_names.h's DescribesTheMachine: the metrics two runs of a cell may differ in."""
    return metric.endswith("seconds") or metric in (
        "train/tokens_per_second", "train/mfu", "train/peak_rss_bytes", "train/peak_cuda_bytes")


def differences(by_cell, expected, again_since_ms):
    """How MLflow's runs differ from the database's points: every point once at its step, with
    its value and timestamp. A point measured again by the resumed attempt (the database holds
    its later time: since `again_since_ms`) keeps in MLflow what was first sent: the same value
    for every metric but those that describe the machine, an earlier time."""
    problems = []
    if set(by_cell) != set(expected):
        return [f"runs of cells {sorted(by_cell)}, expected {sorted(expected)}"]
    for cell, metrics in expected.items():
        history = by_cell[cell]["history"]
        if set(history) != set(metrics):
            problems.append(f"{cell}: keys {sorted(set(history) ^ set(metrics))} differ")
            continue
        for key, points in metrics.items():
            got = sorted(history[key])
            if [p[0] for p in got] != [p[0] for p in points]:
                problems.append(f"{cell} {key}: steps {[p[0] for p in got]}, expected "
                                f"{[p[0] for p in points]}")
                continue
            for g, e in zip(got, points):
                if e[1] < again_since_ms:
                    if g != e:
                        problems.append(f"{cell} {key}: {g}, expected {e}")
                elif not describes_the_machine(key) and g[2] != e[2]:
                    problems.append(f"{cell} {key} (measured again): {g}, expected {e}")
    return problems


def run(onset_cli, study, data_dir, *flags, **kwargs):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}
    return subprocess.Popen([onset_cli, "run", str(study), "--data-dir", data_dir, "--workers",
                             "2", "--no-results", *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, env=env,
                            **kwargs)


def test_each_cell_is_a_run_and_a_stopped_study_continues_its_runs(server, onset_cli,
                                                                    onset_train, tmp_path):
    study = tmp_path / "mirrored.yaml"
    study.write_text(STUDY_FILE)
    data_dir = str(tmp_path / "data")
    trainer, release = live.held_trainer(onset_train, tmp_path)

    # First: the trainers finish and hold their cells; once MLflow has points, the study is
    # interrupted (the cells are handed back, the coordinator stops).
    first = run(onset_cli, study, data_dir, "--mlflow", server, "--trainer", trainer)
    try:
        deadline = time.monotonic() + live.WAIT_S
        while True:
            runs = read_runs(server, STUDY)
            if len(runs) == 2 and all(r["history"].get("train/loss") for r in runs):
                break
            assert first.poll() is None, first.stderr.read()
            assert time.monotonic() < deadline, f"no runs in MLflow: {runs}"
            time.sleep(1)
        assert {r["status"] for r in runs} == {"RUNNING"}
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    finally:
        release.write_text("")
        if first.poll() is None:
            first.kill()
            first.wait()

    # Then: run again, with onset-train itself, to the end.
    again_since_ms = int(time.time() * 1000)
    second = run(onset_cli, study, data_dir, "--mlflow", server)
    _, stderr = second.communicate(timeout=600)
    assert second.returncode == 0, stderr

    expected = expected_runs(onset_cli, data_dir)
    assert len(expected) == 2
    deadline = time.monotonic() + live.WAIT_S
    while True:
        runs = read_runs(server, STUDY)
        by_cell = {r["tags"].get("onset.cell_id"): r for r in runs}
        done = len(runs) == 2 and all(r["status"] == "FINISHED" for r in runs)
        problems = differences(by_cell, expected, again_since_ms)
        if done and not problems:
            break
        assert time.monotonic() < deadline, problems[:20]
        time.sleep(1)
    # One run per cell (the second process found the first one's), each point once.
    assert set(by_cell) == set(expected)
    cells = {c["id"]: c for c in json.loads(subprocess.run(
        [onset_cli, "status", STUDY, "--json", "--data-dir", data_dir], stdout=subprocess.PIPE,
        text=True, check=True).stdout)["cells"]}
    for cell_id, r in by_cell.items():
        assert r["tags"]["onset.study"] == STUDY
        assert r["tags"]["onset.state"] == "succeeded"
        assert r["end_time"] and r["end_time"] > 0
        for axis, value in cells[cell_id]["axes"].items():
            assert r["params"][axis] == value
        assert r["params"]["config.model.d_model"] == "32"
        assert r["name"].endswith(f"id={cell_id}")
