"""Results: a study's cells and metric points as pandas DataFrames, and `onset compare`."""

import json
import os

from . import frames
from .command import find_onset, flag_arguments, run_onset


def _as_list(value):
    """None -> [], "a" -> ["a"], an iterable -> a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


class Results:
    """What onset.open returns: read-only access to the studies of a data directory or of a
    coordinator. Every DataFrame leaves out trunks (the shared jobs of WSD budgets, not grid
    points), as `onset results`, `compare` and `export` do."""

    def __init__(self, source, cli_argv=None, cli_env=None, onset_bin=None):
        self.source = source
        # The global flags that name the source to the onset CLI; None: the CLI cannot reach it.
        self._cli_argv = None if cli_argv is None else list(cli_argv)
        self._cli_env = cli_env
        self._onset_bin = onset_bin

    def __repr__(self):
        return f"Results({self.source!r})"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.source.close()

    def studies(self):
        """A row per study: name, description, tags (a list), source_name (the file it was
        submitted from), created (UTC)."""
        import pandas as pd

        rows = self.source.studies()
        frame = pd.DataFrame(rows, columns=["name", "description", "tags", "source_name",
                                            "created_unix_ms"])
        frame["created"] = pd.to_datetime(frame.pop("created_unix_ms"), unit="ms", utc=True)
        return frame

    def metric_names(self, study):
        """The names of every metric the study's cells reported, sorted."""
        return self.source.metric_names(study)

    def cells(self, study):
        """A row per cell in queue order: cell_id, an `axis.NAME` column per axis (the values as
        stored: strings, "-" where the axis does not apply), state, tokens_budget, tokens_done,
        then a column per metric (e.g. `niah/acc`) holding its final value: the value of the
        point with the most tokens, NaN where that value is not finite or the cell has none."""
        with self.source.snapshot():
            cells = self.source.cells(study)
            points = self.source.points(study)
        return frames.cells_frame(cells, points)

    def metrics(self, study, names=None, cells=None):
        """A row per metric point (tidy): cell_id, axis.*, metric, tokens, value (NaN where not
        finite), at_unix_ms (nullable Int64: when it was measured, by the trainer's clock; <NA>
        where not known) and wall_time (the same as a UTC datetime, NaT where not known).
        `names`: only these metrics (a name or a list); `cells`: only these cells (ids or
        unique prefixes of them)."""
        names = _as_list(names)
        with self.source.snapshot():
            all_cells = self.source.cells(study)
            ids = self._resolve_cells(all_cells, _as_list(cells))
            points = self.source.points(study, names, ids)
        chosen = [c for c in all_cells if not ids or c.cell_id in set(ids)]
        return frames.metrics_frame(chosen, points)

    @staticmethod
    def _resolve_cells(cells, wanted):
        """Full cell ids for ids or unique prefixes; ValueError for one that names no cell or
        several."""
        ids = []
        for prefix in wanted:
            matches = [c.cell_id for c in cells if c.cell_id.startswith(prefix)]
            if prefix in matches:
                matches = [prefix]
            if len(matches) != 1:
                raise ValueError(f"cell '{prefix}': " + (
                    "no cell of the study has that id" if not matches else
                    f"{len(matches)} cells begin with it ({', '.join(matches[:4])}, ...)"))
            ids.append(matches[0])
        return ids

    def compare(self, study, metric, threshold, *, direction=None, by=None, baseline=None,
                x=None, onset_bin=None, **flags):
        """`onset compare STUDY --metric M --threshold X ... --json`, parsed: tokens (or FLOPs)
        to the threshold per group of cells, seeds as a survival curve, speed-ups against a
        baseline (docs/comparing.md, docs/schema.md). `by`: axes to group by (a list or
        "arch,pos"); `baseline`: e.g. "arch=full"; `direction`: "up", "down" or "auto"; `x`:
        "tokens" or "flops"; any other flag of `onset compare` by name (`foo_bar=1` for
        --foo-bar 1). The analysis is onset's own: the CLI runs it (the binary: `onset_bin`,
        else the one given to onset.open, else $ONSET_BIN, else `onset` on PATH); for a
        coordinator opened by its HTTP API alone, the API's compare, which runs the same code."""
        options = {"direction": direction, "by": by, "baseline": baseline, "x": x, **flags}
        if self._cli_argv is None:
            if not hasattr(self.source, "compare"):
                raise ValueError("onset compare reads a data directory's onset.db: open the "
                                 "directory that holds it")
            query = {"metric": metric, "threshold": repr(float(threshold))}
            for name, value in options.items():
                if value is not None:
                    query[name] = ",".join(value) if isinstance(value, (list, tuple)) else value
            return self.source.compare(study, query)
        binary = find_onset(onset_bin or self._onset_bin)
        argv = self._cli_argv + ["compare", study, "--metric", metric,
                                 "--threshold", repr(float(threshold)), "--json"]
        argv += flag_arguments(options)
        return json.loads(run_onset(binary, argv, env=self._cli_env))


def cli_environment(drop=()):
    """The environment for the onset CLI, less the variables that would point it elsewhere."""
    env = dict(os.environ)
    for name in drop:
        env.pop(name, None)
    return env
