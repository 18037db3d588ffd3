"""Results straight from a data directory's SQLite database, read-only (docs/schema.md).

The file is opened with `mode=ro`: nothing is ever written, migrated or locked for writing, and
an onsetd or `onset run` writing it meanwhile is not held up (WAL readers never block the
writer). Each call reads in one transaction, so what it returns is one consistent state.
"""

import contextlib
import json
import os
import sqlite3
import urllib.parse

from .cell import Cell, Point

DATABASE_NAME = "onset.db"  # in a data directory (`onset run --data-dir`, ./onset-data)

# The metric points of a study's grid points (never a trunk's), optionally only some metrics and
# cells, as the coordinator's ForEachMetricPoint reads them (coordinator/store/
# sqlite_store_feeds.cc): the lists travel as JSON arrays, in primary-key order.
_POINTS_SQL = """
SELECT c.hash, m.name, m.tokens, m.value, {at_unix_ms}
FROM metrics m JOIN cells c ON c.id = m.cell_id
WHERE c.study_id = ?1 AND c.role <> 'trunk'
  AND (json_array_length(?2) = 0 OR m.name IN (SELECT value FROM json_each(?2)))
  AND (json_array_length(?3) = 0 OR c.hash IN (SELECT value FROM json_each(?3)))
ORDER BY m.cell_id, m.name, m.tokens
"""


def _axes(axes_json):
    """The display axes of `cells.axes_json`: its string values (the "aliases" object is not an
    axis), as the coordinator reads them."""
    try:
        parsed = json.loads(axes_json)
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {k: v for k, v in parsed.items() if isinstance(v, str)}


class SqliteSource:
    """A data directory (holding onset.db) or the database file itself."""

    def __init__(self, path):
        path = os.fspath(path)
        database = os.path.join(path, DATABASE_NAME) if os.path.isdir(path) else path
        if not os.path.isfile(database):
            raise FileNotFoundError(f"no database {database}: `onset run FILE` makes one "
                                    "(in ./onset-data unless --data-dir says otherwise)")
        self.database = os.path.abspath(database)
        # The data directory the onset CLI can be pointed at (--data-dir), if the file is one's.
        self.data_dir = (os.path.dirname(self.database)
                         if os.path.basename(self.database) == DATABASE_NAME else None)
        uri = "file:" + urllib.parse.quote(self.database) + "?mode=ro"
        self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA query_only = ON")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(metrics)")}
        # Schema version 11 added the wall-clock time of each point; older databases lack it.
        self.has_point_times = "at_unix_ms" in columns

    def __repr__(self):
        return f"SqliteSource({self.database!r})"

    def close(self):
        self._db.close()

    @contextlib.contextmanager
    def snapshot(self):
        """One read transaction: every query inside sees the same state of the database."""
        self._db.execute("BEGIN")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    def studies(self):
        """[{name, description, tags, source_name, created_unix_ms}] in submission order (no
        tags in a database from before schema version 13)."""
        tags = {}
        if self._db.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND "
                            "name = 'study_tags'").fetchone():
            for study_id, tag in self._db.execute(
                    "SELECT study_id, tag FROM study_tags ORDER BY study_id, tag"):
                tags.setdefault(study_id, []).append(tag)
        rows = self._db.execute(
            "SELECT id, name, description, source_name, created_at FROM studies ORDER BY id")
        return [{"name": n, "description": d, "tags": tags.get(i, []), "source_name": s,
                 "created_unix_ms": t} for i, n, d, s, t in rows]

    def _study_id(self, study):
        row = self._db.execute("SELECT id FROM studies WHERE name = ?", (study,)).fetchone()
        if row is None:
            known = ", ".join(s["name"] for s in self.studies()) or "none"
            raise LookupError(f"no study named '{study}' in {self.database} (studies: {known})")
        return row[0]

    def cells(self, study):
        """The study's grid points in queue order (trunks left out)."""
        rows = self._db.execute(
            "SELECT hash, axes_json, state, role, tokens_done, tokens_budget FROM cells "
            "WHERE study_id = ? AND role <> 'trunk' ORDER BY id", (self._study_id(study),))
        return [Cell(h, _axes(a), state, role, done, budget)
                for h, a, state, role, done, budget in rows]

    def metric_names(self, study):
        """Every metric name the study's grid points reported, sorted."""
        rows = self._db.execute(
            "SELECT DISTINCT m.name FROM metrics m JOIN cells c ON c.id = m.cell_id "
            "WHERE c.study_id = ? AND c.role <> 'trunk' ORDER BY m.name",
            (self._study_id(study),))
        return [name for (name,) in rows]

    def points(self, study, names=(), cell_ids=()):
        """The study's metric points (only `names` and `cell_ids` when given), in the order of
        cell, metric, tokens."""
        sql = _POINTS_SQL.format(at_unix_ms="m.at_unix_ms" if self.has_point_times else "NULL")
        rows = self._db.execute(sql, (self._study_id(study), json.dumps(list(names)),
                                      json.dumps(list(cell_ids))))
        return [Point(*row) for row in rows]
