"""A study's results in pandas: onset.open(...) -> Results (docs/python.md)."""

import os

from .command import OnsetCommandError
from .http_source import HttpSource, read_token
from .sqlite_source import SqliteSource
from .study_results import Results, cli_environment

__all__ = ["open", "Results", "OnsetCommandError"]

# What would make the onset CLI read another coordinator than the data directory it is given.
_COORDINATOR_VARIABLES = ("ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE")


def open(source="onset-data", *, token=None, token_file=None, coordinator=None, tls_ca=None,
         onset_bin=None):
    """Results of the studies in `source`, read-only:

    - a data directory (what `onset run --data-dir` and the CLI use; ./onset-data by default)
      or a database file: read with SQLite, `mode=ro`, whether or not a run is writing it;
    - `http://HOST:PORT` (or https): a coordinator's JSON API, onsetd --http or
      `onset dashboard`, with the coordinator's token (`token`, `token_file`, else
      $ONSET_TOKEN or $ONSET_TOKEN_FILE; sent as `Authorization: Bearer`, never in a URL) and
      `tls_ca` for https. `coordinator` (HOST:PORT of its gRPC service) lets `compare` run the
      CLI against it; without it, `compare` asks the API.

    `onset_bin`: the onset binary for `compare` (else $ONSET_BIN, else `onset` on PATH)."""
    text = os.fspath(source)
    if text.startswith(("http://", "https://")):
        api = HttpSource(text, read_token(token, token_file), tls_ca=tls_ca)
        if not coordinator:
            return Results(api, cli_argv=None, onset_bin=onset_bin)
        argv = ["--coordinator", coordinator]
        env = cli_environment(drop=_COORDINATOR_VARIABLES)
        if token_file:
            argv += ["--token-file", os.path.abspath(token_file)]
        else:
            env["ONSET_TOKEN"] = read_token(token, None)  # in the environment, never in argv
        if tls_ca:
            argv += ["--tls-ca", os.path.abspath(tls_ca)]
        return Results(api, cli_argv=argv, cli_env=env, onset_bin=onset_bin)
    database = SqliteSource(text)
    argv = None if database.data_dir is None else ["--data-dir", database.data_dir]
    return Results(database, cli_argv=argv, cli_env=cli_environment(drop=_COORDINATOR_VARIABLES),
                   onset_bin=onset_bin)
