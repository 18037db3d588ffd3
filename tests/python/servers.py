"""The HTTP servers the results tests read: `onset dashboard` on a data directory, and onsetd on
a copy of its database. Each is a context manager that stops the process it started."""

import contextlib
import os
import select
import signal
import sqlite3
import subprocess
import time

START_TIMEOUT_S = 30


def _stop(process):
    """SIGTERM (both servers stop cleanly on it), then SIGKILL after 10 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def dashboard(onset, data_dir):
    """`onset dashboard --http 127.0.0.1:0` on data_dir: yields its base URL (http://HOST:PORT).
    Its token is the run's, data_dir/onsetd.token."""
    process = subprocess.Popen([onset, "dashboard", "--http", "127.0.0.1:0", "--data-dir",
                                data_dir], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, text=True)
    try:
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT_S)
        if not ready:
            raise RuntimeError("onset dashboard printed no address")
        url = process.stdout.readline().strip()  # http://HOST:PORT/#token=...
        yield url.split("/#", 1)[0]
    finally:
        _stop(process)


def copy_database(data_dir, directory):
    """A consistent copy of data_dir/onset.db in `directory` (SQLite's backup)."""
    os.makedirs(directory, exist_ok=True)
    copy = os.path.join(directory, "onset.db")
    source = sqlite3.connect(f"file:{os.path.join(data_dir, 'onset.db')}?mode=ro", uri=True)
    target = sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.close()
    return copy


def _read_when_written(path, process):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                return text
        if process.poll() is not None:
            raise RuntimeError(f"onsetd exited {process.returncode} before writing {path}")
        time.sleep(0.1)
    raise RuntimeError(f"onsetd wrote no {path} within {START_TIMEOUT_S} s")


@contextlib.contextmanager
def coordinator(onsetd, database):
    """onsetd on `database` with gRPC and HTTP on free loopback ports: yields (grpc HOST:PORT,
    http base URL, token file)."""
    directory = os.path.dirname(database)
    address_file = os.path.join(directory, "grpc.addr")
    http_file = os.path.join(directory, "http.addr")
    process = subprocess.Popen(
        [onsetd, "--db", database, "--skip-quick-check", "--listen", "127.0.0.1:0",
         "--address-file", address_file, "--http", "127.0.0.1:0", "--http-address-file",
         http_file], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL)
    try:
        grpc = _read_when_written(address_file, process)
        http = _read_when_written(http_file, process)
        yield grpc, "http://" + http, os.path.join(directory, "onsetd.token")
    finally:
        _stop(process)


@contextlib.contextmanager
def tensorboard(logdir):
    """`tensorboard --logdir LOGDIR` in its default mode (the fast data server loads the files),
    re-reading the directory every second, on a free loopback port: yields (base URL, the
    server's log so far as a function). Skips when the tensorboard package is missing."""
    import shutil
    import sys

    import pytest

    pytest.importorskip("tensorboard")
    exe = shutil.which("tensorboard", path=os.path.dirname(sys.executable)) or \
        shutil.which("tensorboard")
    if exe is None:
        pytest.skip("no tensorboard program beside this Python")
    log = logdir.rstrip("/") + ".tensorboard.log"
    out = open(log, "w")
    process = subprocess.Popen([exe, "--logdir", logdir, "--host", "127.0.0.1", "--port", "0",
                                "--reload_interval", "1"], stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)

    def read_log():
        with open(log) as f:
            return f.read()

    try:
        deadline = time.monotonic() + START_TIMEOUT_S * 2
        url = None
        while url is None:
            for line in read_log().splitlines():
                if " at http://" in line:
                    url = line.split(" at ", 1)[1].split()[0].rstrip("/")
            if url is None:
                if process.poll() is not None:
                    raise RuntimeError(f"tensorboard exited {process.returncode}:\n{read_log()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tensorboard printed no address:\n{read_log()}")
                time.sleep(0.2)
        yield url, read_log
    finally:
        _stop(process)
        out.close()
