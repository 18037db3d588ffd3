"""`onset run FILE --data-dir RELATIVE`: the checkpoint root is made absolute, so the trainers
(which run in their own directories) find their trunk's checkpoint, and WSD branches succeed."""

import os
import sqlite3
import subprocess

import tiny_study


def test_a_relative_data_directory_runs_every_branch(onset_cli, tmp_path):
    (tmp_path / "tiny.yaml").write_text(tiny_study.STUDY)
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}
    result = subprocess.run([os.path.abspath(onset_cli), "run", "tiny.yaml", "--data-dir", "data", "--workers",
                             "2", "--no-results"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.DEVNULL, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    db = sqlite3.connect(f"file:{tmp_path / 'data' / 'onset.db'}?mode=ro", uri=True)
    states = db.execute("SELECT role, state FROM cells").fetchall()
    db.close()
    assert {state for _, state in states} == {"succeeded"}, states
    assert sum(role == "branch" for role, _ in states) == 4
