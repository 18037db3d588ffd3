-- Version 2: cells can end diverged or cancelled, and wait in 'backoff' before a retry; attempts
-- record why they ended (their failure class) and can be handed back (a worker asked to stop)
-- or cancelled. SQLite cannot change a CHECK constraint in place: the two tables are rebuilt
-- (https://www.sqlite.org/lang_altertable.html, "other kinds of table schema changes"); the
-- migration runs with foreign keys off and checks them before it commits (db/schema.cc).

CREATE TABLE cells_v2 (
  id                INTEGER PRIMARY KEY,
  study_id          INTEGER NOT NULL REFERENCES studies(id),
  hash              TEXT    NOT NULL,
  axes_json         TEXT    NOT NULL,
  config_json       TEXT    NOT NULL,
  tokens_budget     INTEGER NOT NULL,
  state             TEXT    NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'diverged',
                                     'cancelled', 'backoff')),
  tokens_done       INTEGER NOT NULL DEFAULT 0,
  tokens_per_second REAL    NOT NULL DEFAULT 0,
  latest_loss       REAL,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  -- Failed attempts that count towards the retry limit since the cell was (re)queued by hand.
  failures          INTEGER NOT NULL DEFAULT 0,
  -- state 'backoff': the cell may be claimed again from this time on.
  retry_at          INTEGER NOT NULL DEFAULT 0,
  -- 1: the next attempt starts from scratch (the worker discards the cell's checkpoints).
  fresh             INTEGER NOT NULL DEFAULT 0 CHECK (fresh IN (0, 1)),
  UNIQUE (study_id, hash)
) STRICT;
INSERT INTO cells_v2 (id, study_id, hash, axes_json, config_json, tokens_budget, state,
                      tokens_done, tokens_per_second, latest_loss, created_at, updated_at)
  SELECT id, study_id, hash, axes_json, config_json, tokens_budget, state, tokens_done,
         tokens_per_second, latest_loss, created_at, updated_at FROM cells;
DROP TABLE cells;
ALTER TABLE cells_v2 RENAME TO cells;
CREATE INDEX cells_by_state ON cells (state, id);

-- outcome: 'succeeded', 'failed', 'diverged' (a result: the loss was not finite), 'lost' (the
-- lease expired or the coordinator restarted without it), 'handed_back' (the worker was asked
-- to stop and the trainer checkpointed: not a failure), 'cancelled' (by `onset cancel`).
-- failure_class: why a failed or lost attempt failed ('crash', 'lost', 'oom', 'config'), ''
-- otherwise.
CREATE TABLE attempts_v2 (
  id            INTEGER PRIMARY KEY,
  cell_id       INTEGER NOT NULL REFERENCES cells(id),
  attempt       INTEGER NOT NULL,
  worker_id     TEXT    NOT NULL REFERENCES workers(id),
  lease_id      TEXT    NOT NULL UNIQUE,
  started_at    INTEGER NOT NULL,
  ended_at      INTEGER,
  outcome       TEXT    CHECK (outcome IN ('succeeded', 'failed', 'diverged', 'lost',
                                           'handed_back', 'cancelled')),
  exit_code     INTEGER,
  signal        INTEGER,
  reason        TEXT    NOT NULL DEFAULT '',
  stderr_tail   TEXT    NOT NULL DEFAULT '',
  failure_class TEXT    NOT NULL DEFAULT '',
  UNIQUE (cell_id, attempt)
) STRICT;
INSERT INTO attempts_v2 (id, cell_id, attempt, worker_id, lease_id, started_at, ended_at,
                         outcome, exit_code, signal, reason, stderr_tail, failure_class)
  SELECT id, cell_id, attempt, worker_id, lease_id, started_at, ended_at, outcome, exit_code,
         signal, reason, stderr_tail,
         CASE outcome WHEN 'failed' THEN 'crash' WHEN 'lost' THEN 'lost' ELSE '' END
  FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_v2 RENAME TO attempts;
CREATE INDEX attempts_running ON attempts (cell_id) WHERE ended_at IS NULL;
CREATE INDEX attempts_by_end ON attempts (ended_at);
