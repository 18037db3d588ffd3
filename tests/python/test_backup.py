"""`onset backup` of a coordinator while it trains a study, and a restore from it.

`onset run` trains a study; while its workers write points, `onset backup` takes a copy through
the running coordinator. The copy passes PRAGMA integrity_check and holds every point committed
before the backup began. Then the run is stopped, its database replaced by the copy (as after
losing the file), and `onset run` on the restored database finishes the study.
"""

import os
import shutil
import signal
import sqlite3
import subprocess
import time

STUDY = """\
name: backed
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 1}
eval: {every_tokens: 8K, heldout_seqs: 2, niah_lengths: [64], niah_samples: 2}
grid:
  arch: [full, "swa:1"]
  window: [16]
  tokens: [48K]
  seeds: 1
"""


def _env():
    return {k: v for k, v in os.environ.items()
            if k not in ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_DATA_DIR")}


def _count(database, sql):
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


def test_a_backup_under_load_restores_and_the_study_finishes(onset_cli, tmp_path):
    study = tmp_path / "backed.yaml"
    study.write_text(STUDY)
    data = tmp_path / "data"
    database = str(data / "onset.db")
    run = subprocess.Popen([onset_cli, "run", str(study), "--data-dir", str(data), "--workers",
                            "2", "--no-results"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=_env(),
                           stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        before = 0
        while time.monotonic() < deadline and run.poll() is None:
            if os.path.exists(database):
                try:
                    before = _count(database, "SELECT COUNT(*) FROM metrics")
                except sqlite3.OperationalError:
                    before = 0
            if before >= 20:
                break
            time.sleep(0.1)
        assert run.poll() is None and before >= 20, "the study ended before a backup could run"
        copy = str(tmp_path / "copy.db")
        result = subprocess.run([onset_cli, "backup", "--out", copy, "--data-dir", str(data)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_env(), timeout=120)
        assert result.returncode == 0, result.stderr
        assert "quick_check ok" in result.stdout
        assert "no coordinator is running" not in result.stderr  # taken by the running one
        still_running = run.poll() is None
    finally:
        run.send_signal(signal.SIGTERM)
        run.communicate(timeout=120)

    assert still_running, "the backup was not taken while the study trained"
    assert _count(copy, "PRAGMA integrity_check") == "ok"
    assert _count(copy, "SELECT COUNT(*) FROM metrics") >= before
    assert not any(name.startswith("copy.db.") or name.startswith("onset.db.backup")
                   for name in os.listdir(tmp_path) + os.listdir(data))

    # Restore: the copy replaces the database; the checkpoints stay where they are.
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(database + suffix):
            os.remove(database + suffix)
    shutil.copyfile(copy, database)
    finished = subprocess.run([onset_cli, "run", str(study), "--data-dir", str(data),
                               "--workers", "2", "--no-results"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(),
                              stdin=subprocess.DEVNULL, timeout=300)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert _count(database, "SELECT COUNT(*) FROM cells WHERE role <> 'trunk' AND "
                            "state <> 'succeeded'") == 0
    assert _count(database, "SELECT COUNT(*) FROM cells WHERE role <> 'trunk'") == 2
