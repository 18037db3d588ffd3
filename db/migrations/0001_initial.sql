-- onset's coordinator database, version 1.
-- Every time is wall-clock unix milliseconds. Every table is STRICT.

-- A study: one submitted study file. Resubmitting a file under the same name adds only the
-- cells that are new; source_name/source_yaml then hold the latest submission.
CREATE TABLE studies (
  id          INTEGER PRIMARY KEY,
  name        TEXT    NOT NULL UNIQUE,
  description TEXT    NOT NULL DEFAULT '',
  source_name TEXT    NOT NULL,
  source_yaml TEXT    NOT NULL,
  created_at  INTEGER NOT NULL
) STRICT;

-- A cell: one point of a study's grid, content-addressed by `hash` (16 hex digits of the
-- SHA-256 of its canonical config). Queue order is insertion order (id).
CREATE TABLE cells (
  id                INTEGER PRIMARY KEY,
  study_id          INTEGER NOT NULL REFERENCES studies(id),
  hash              TEXT    NOT NULL,
  axes_json         TEXT    NOT NULL,
  config_json       TEXT    NOT NULL,
  tokens_budget     INTEGER NOT NULL,
  state             TEXT    NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
  tokens_done       INTEGER NOT NULL DEFAULT 0,
  tokens_per_second REAL    NOT NULL DEFAULT 0,
  latest_loss       REAL,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  UNIQUE (study_id, hash)
) STRICT;
CREATE INDEX cells_by_state ON cells (state, id);

CREATE TABLE workers (
  id            TEXT    PRIMARY KEY,
  host          TEXT    NOT NULL,
  slots         INTEGER NOT NULL,
  version       TEXT    NOT NULL,
  registered_at INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL
) STRICT;

-- One run of a cell under one lease. ended_at/outcome are NULL while it runs.
-- outcome 'lost': the lease expired or the coordinator restarted without it; the cell was
-- requeued.
CREATE TABLE attempts (
  id          INTEGER PRIMARY KEY,
  cell_id     INTEGER NOT NULL REFERENCES cells(id),
  attempt     INTEGER NOT NULL,
  worker_id   TEXT    NOT NULL REFERENCES workers(id),
  lease_id    TEXT    NOT NULL UNIQUE,
  started_at  INTEGER NOT NULL,
  ended_at    INTEGER,
  outcome     TEXT    CHECK (outcome IN ('succeeded', 'failed', 'lost')),
  exit_code   INTEGER,
  signal      INTEGER,
  reason      TEXT    NOT NULL DEFAULT '',
  stderr_tail TEXT    NOT NULL DEFAULT '',
  UNIQUE (cell_id, attempt)
) STRICT;
CREATE INDEX attempts_running ON attempts (cell_id) WHERE ended_at IS NULL;

-- Metric points by tokens seen. Re-sent points replace the stored one (upsert), so reporting
-- is idempotent. value NULL means NaN (SQLite stores NaN as NULL).
CREATE TABLE metrics (
  cell_id    INTEGER NOT NULL REFERENCES cells(id),
  name       TEXT    NOT NULL,
  tokens     INTEGER NOT NULL,
  value      REAL,
  attempt_id INTEGER NOT NULL REFERENCES attempts(id),
  PRIMARY KEY (cell_id, name, tokens)
) STRICT, WITHOUT ROWID;
