-- Version 3: a durable log of cell state changes (what `onset watch` streams and resumes from),
-- the trainers' log lines (`onset logs`), and devices: what each worker has, what each cell
-- needs, and which devices each attempt ran on.

-- One row per change of a cell's state, and one when a cell is added (old_state NULL). Written
-- by the triggers below, so no code path that changes a state can forget it. seq only grows
-- (AUTOINCREMENT never reuses a number), so a reader that remembers the last seq it saw resumes
-- exactly where it stopped. at: the cell's updated_at, which every state change sets.
CREATE TABLE cell_events (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  study_id  INTEGER NOT NULL REFERENCES studies(id),
  cell_id   INTEGER NOT NULL REFERENCES cells(id),
  old_state TEXT,
  new_state TEXT    NOT NULL,
  at        INTEGER NOT NULL,
  attempt   INTEGER NOT NULL DEFAULT 0,   -- the cell's latest attempt at the time (0: none yet)
  worker_id TEXT    NOT NULL DEFAULT '',  -- that attempt's worker
  reason    TEXT    NOT NULL DEFAULT ''   -- that attempt's reason, when it ended unsuccessfully
) STRICT;
CREATE INDEX cell_events_by_study ON cell_events (study_id, seq);

CREATE TRIGGER cell_added AFTER INSERT ON cells
BEGIN
  INSERT INTO cell_events (study_id, cell_id, old_state, new_state, at)
  VALUES (NEW.study_id, NEW.id, NULL, NEW.state, NEW.updated_at);
END;

CREATE TRIGGER cell_state_changed AFTER UPDATE OF state ON cells
WHEN NEW.state IS NOT OLD.state
BEGIN
  INSERT INTO cell_events (study_id, cell_id, old_state, new_state, at, attempt, worker_id,
                           reason)
  VALUES (NEW.study_id, NEW.id, OLD.state, NEW.state, NEW.updated_at,
          COALESCE((SELECT MAX(attempt) FROM attempts WHERE cell_id = NEW.id), 0),
          COALESCE((SELECT worker_id FROM attempts WHERE cell_id = NEW.id
                    ORDER BY attempt DESC LIMIT 1), ''),
          COALESCE((SELECT reason FROM attempts WHERE cell_id = NEW.id AND ended_at IS NOT NULL
                    AND outcome <> 'succeeded' AND attempt =
                        (SELECT MAX(attempt) FROM attempts WHERE cell_id = NEW.id)), ''));
END;

-- What a trainer wrote to stderr, line by line, as its worker relayed it. line is numbered by
-- the worker from 1 per attempt, so a re-sent line replaces itself. Each attempt keeps its most
-- recent lines only (the cap is in coordinator/sqlite_store.cc).
CREATE TABLE log_lines (
  attempt_id INTEGER NOT NULL REFERENCES attempts(id),
  line       INTEGER NOT NULL,
  at         INTEGER NOT NULL,
  text       TEXT    NOT NULL,
  PRIMARY KEY (attempt_id, line)
) STRICT, WITHOUT ROWID;

-- The devices a worker offers, comma-separated ("cuda:0,cuda:1", or "cpu:0,cpu:1" for CPU
-- slots).
ALTER TABLE workers ADD COLUMN devices TEXT NOT NULL DEFAULT '';
-- How many devices one attempt of the cell needs (data-parallel ranks).
ALTER TABLE cells ADD COLUMN devices INTEGER NOT NULL DEFAULT 1 CHECK (devices >= 1);
-- The devices the attempt was given, comma-separated.
ALTER TABLE attempts ADD COLUMN devices TEXT NOT NULL DEFAULT '';
