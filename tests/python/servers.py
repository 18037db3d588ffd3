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
